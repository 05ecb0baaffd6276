"""Catalogue loading and validation, evaluation of rules over facts, the Finding model."""
