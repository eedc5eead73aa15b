"""The catalog's one word for each thing: a model by its public name, the parameter check,
a model's timeout."""

from __future__ import annotations

import pytest

from arena.catalog.models import DEFAULT_TIMEOUT_S, ModelEntry
from arena.catalog.selectors import model_by_name
from arena.catalog.services import params_check
from arena.core.errors import ServiceError
from tests.helpers import make_model


@pytest.mark.django_db
def test_model_by_name_finds_a_model_active_or_not_and_nothing_for_a_blank_name():
    model = make_model("Quiet Heron", "qh-1")
    model.active = False
    model.save()
    assert model_by_name("Quiet Heron") == model
    assert model_by_name("Loud Heron") is None
    assert model_by_name("") is None


@pytest.mark.django_db
def test_params_check_names_the_model_and_the_parameter_it_cannot_take():
    able = make_model("Able Owl", "ao-1")
    bare = make_model("Bare Owl", "bo-1")
    bare.supported_params = ["temperature"]
    params_check(models=[able, bare], params={"temperature": 0.7, "top_p": None})
    with pytest.raises(ServiceError) as refused:
        params_check(models=[able, bare], params={"top_p": 0.9})
    assert refused.value.code == "unsupported_param"
    assert "Bare Owl does not support 'top_p'" in refused.value.message


def test_a_models_timeout_is_its_settings_else_the_one_default():
    assert ModelEntry(backend_settings={"timeout_s": 30}).timeout_s == 30.0
    assert ModelEntry(backend_settings={}).timeout_s == DEFAULT_TIMEOUT_S == 120.0
