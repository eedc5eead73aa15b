"""Pure helpers every room may import: the service error type and text helpers. Imports
nothing from the project."""
