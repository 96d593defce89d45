"""Aisle: storefront personalization and analytics."""
