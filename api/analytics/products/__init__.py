"""Product analytics: the catalog and its feeds, one product's reports, top products, tracking status."""
