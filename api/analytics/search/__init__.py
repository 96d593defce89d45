"""Search analytics: top queries, zero-result queries and the products opened from search."""
