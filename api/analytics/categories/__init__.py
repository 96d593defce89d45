"""Category analytics: activity, conversion, products, paths and filters of a site's categories."""
