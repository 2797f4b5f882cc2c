"""A small order book: the example project of the structure tests (refactors and the changes
tests miss, docs/diffing.md "Structure")."""
