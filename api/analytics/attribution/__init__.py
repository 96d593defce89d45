"""The attribution of one conversion: its touchpoints and each one's credit per model."""
