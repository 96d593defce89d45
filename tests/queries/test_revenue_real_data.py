"""Revenue on real invoices: the first 3,000 lines of UCI Online Retail through `aisle import --preset
online-retail`, against a reading of the file done here (sales: `is_retail_sale`; cancellations are refunds)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from queries.revenue import ReportRange, revenue_overview
from tests.queries.helpers import imported_retail_invoices, is_retail_sale


def test_revenue_of_real_invoices_matches_a_reading_of_the_file(lake):
    ingest, engine = lake
    site_id, invoices = imported_retail_invoices(ingest)

    def total(lines: list[dict]) -> Decimal:
        return sum((int(line["Quantity"]) * Decimal(line["UnitPrice"]) for line in lines), Decimal(0))

    sales = [total(lines) for invoice, lines in invoices.items() if is_retail_sale(invoice, lines)]
    refunds = [total(lines) for invoice, lines in invoices.items() if invoice.startswith("C")]
    assert len(sales) > 100 and refunds

    report = revenue_overview(
        engine, ReportRange(site_id, date(2010, 11, 30), date(2011, 12, 31)), site_currency="GBP"
    )
    [gbp] = report.revenue_by_currency
    revenue, refunded = sum(sales), -sum(refunds)
    assert (gbp.currency, gbp.orders, gbp.refunds) == ("GBP", len(sales), len(refunds))
    assert (gbp.revenue, gbp.refunded) == (f"{revenue:.2f}", f"{refunded:.2f}")
    assert gbp.net_revenue == f"{revenue - refunded:.2f}"
    assert gbp.avg_order_value == f"{(revenue / len(sales)).quantize(Decimal('0.01')):.2f}"
    assert report.total_revenue.model_dump(by_alias=True) == {
        "amount": f"{revenue:.2f}", "currency": "GBP", "mixed": False,
    }  # fmt: skip
