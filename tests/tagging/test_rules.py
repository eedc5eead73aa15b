"""The rules' tags on tables of prompts that should and should not get them."""

from __future__ import annotations

import pytest

from arena.tagging.rules import LONG_QUERY_TOKENS, is_code, is_math, query_tokens, rule_tags

CODE = [
    "```python\nprint('hi')\n```",
    "~~~\nls -la\n~~~",
    "Why does this fail?\ndef add(a, b):\n    return a + b",
    "const total = items.reduce((a, b) => a + b, 0);",
    "for (int i = 0; i < n; i++) {",
    "Traceback (most recent call last):\n  File \"x\", line 3\nKeyError: 'id'",
    "#include <stdio.h>",
    "SELECT name FROM users WHERE age > 30",
    "$ git push origin main gives me a rejected error",
    "Write a function that reverses a linked list.",
    "Can you debug my code? It hangs forever.",
    "How do I read a CSV file in Python?",
    "Implement quicksort in Java.",
    "Explain this function to me: it returns None sometimes.",
    "My program crashes with a segmentation fault.",
    "What is the time complexity of binary search?",
    "Refactor the snippet below to use async.",
    "Write a bash script that renames every .txt file.",
    "Écris une fonction qui trie une liste.",
    "Schreib ein Programm, das Primzahlen findet.",
    "用Python写一个函数计算阶乘",
    "Create a REST API endpoint for user login.",
    "Why does console.log(x) print undefined?",
    "Write a regex that matches email addresses.",
    "What does this SQL do? SELECT * FROM orders WHERE total > 100",
    "What is a race condition? Show a minimal example.",
    "How do I undo my last git commit?",
]
NOT_CODE = [
    "Write a poem about the sea.",
    "Write a script for a YouTube video about cats.",
    "Create a workout program for beginners.",
    "Draft a code of conduct for our meetup.",
    "Explain the function of the liver.",
    "What is the capital of France?",
    "I am travelling in Java next month; what should I see?",
    "My bike chain is covered in rust, how do I clean it?",
    "Write an essay for my history class about Rome.",
    "Summarise the plot of Hamlet in three sentences.",
    "Give me a recipe for banana bread.",
    "What is my zip code if I live in Beverly Hills?",
    "Please SELECT the best photos FROM my trip and describe them.",
    "Select three books from the list and compare them.",
    "Pick a four digit number and tell me a story about it.",
]
MATH = [
    "What is 17 * 23?",
    "Solve 2x + 3 = 7.",
    "3x = 12, what is x?",
    "Compute the derivative of sin(x) * x^2.",
    "Prove that there are infinitely many primes.",
    "Evaluate $\\int_0^1 x^2 dx$.",
    "If f(x) = 3x + 1, what is f(2)?",
    "What is 15% of 80?",
    "Calculate the area of a circle with radius 4.",
    "What is the probability of rolling two sixes?",
    "How many ways can 5 people sit in a row?",
    "Is 12 - 5 bigger than 8?",
    "√2 is irrational: why?",
    "Résous l'équation 3x - 5 = 10.",
    "Berechne die Summe der Zahlen von 1 bis 100.",
    "证明根号2是无理数",
]
NOT_MATH = [
    "Write a poem about the sea.",
    "Plan a 5-10 minute talk on teamwork.",
    "Meet me on 2024-05-01 at noon.",
    "Use 3/4 cup of sugar and bake it.",
    "Which cloud compute instance is cheapest?",
    "What did Einstein eat for breakfast?",
    "Rewrite this email to sound friendlier.",
    "Call me at 555-1234 tomorrow.",
    "Recommend three sci-fi novels from the 1990s.",
    "Give me 2-3 tips for sleeping better.",
]


@pytest.mark.parametrize("text", CODE)
def test_code_prompts_are_tagged_code(text):
    assert is_code(text), text


@pytest.mark.parametrize("text", NOT_CODE)
def test_prose_prompts_are_not_tagged_code(text):
    assert not is_code(text), text


@pytest.mark.parametrize("text", MATH)
def test_math_prompts_are_tagged_math(text):
    assert is_math(text), text


@pytest.mark.parametrize("text", NOT_MATH)
def test_prompts_with_dates_ranges_and_recipes_are_not_tagged_math(text):
    assert not is_math(text), text


def test_more_than_one_turn_is_multi_turn():
    assert "multi_turn" in rule_tags(["Hi there.", "Tell me more."])
    assert "multi_turn" not in rule_tags(["Hi there."])


def test_a_long_query_counts_every_turn_of_the_rater_and_wide_characters_count_more():
    short = "word " * 390  # 1,950 characters: 488 tokens
    assert query_tokens(short) == 488
    assert "long_query" not in rule_tags([short])
    assert "long_query" in rule_tags([short, "x" * 48])
    assert query_tokens("汉" * LONG_QUERY_TOKENS) == LONG_QUERY_TOKENS
    assert "long_query" in rule_tags(["汉" * LONG_QUERY_TOKENS])


def test_a_curated_category_is_a_tag_of_its_own_beside_the_rules():
    assert rule_tags(["Solve 2x + 3 = 7 in Python."], category="reasoning") == {
        "reasoning",
        "math",
        "code",
    }
    assert rule_tags(["Hello!"]) == set()


def test_a_conversation_that_carried_images_is_vision():
    assert "vision" in rule_tags(["What is in this picture?"], images=2)
    assert "vision" not in rule_tags(["What is in this picture?"])
