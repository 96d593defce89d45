"""Ad-hoc SQL for the data team."""
