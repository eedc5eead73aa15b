"""What every room may import: the service error, the append-only base model and
``model_update``, text helpers. Imports nothing from the rest of the project."""
