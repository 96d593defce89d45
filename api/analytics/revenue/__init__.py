"""Revenue: sales per currency, revenue attributed to campaigns, widgets and recommendations, and
identified versus anonymous conversion."""
