"""The spec's canonical event names, by family."""

from __future__ import annotations

EVENT_FAMILIES: dict[str, tuple[str, ...]] = {
    "page": ("page_view", "virtual_page_view", "scroll"),
    "runtime": ("script_injected", "script_error"),
    "placement": (
        "impression",
        "click",
        "close",
        "view",
        "custom_event",
        "hover",
        "slider_navigate",
        "slider_swipe",
    ),
    "widget": ("widget_impression", "widget_view"),
    "product": (
        "product_impression",
        "product_click",
        "product_view",
        "product_dwell_time",
        "add_to_cart",
        "wishlist",
    ),
    "category": ("category_view", "category_filter"),
    "cart_and_checkout": (
        "update_cart",
        "remove_from_cart",
        "cart_abandon",
        "cart_restore",
        "checkout_begin",
        "checkout_progress",
        "checkout_option",
        "purchase",
    ),
    "search": (
        "search_instant_open",
        "search_query",
        "search_results",
        "search_zero_results",
        "search_filter",
        "search_sort",
        "search_page",
        "search_close",
        "recent_search_click",
        "popular_search_click",
        "popular_category_click",
        "popular_product_click",
    ),
    "identity": ("identify", "user_signup", "user_login", "user_update", "user_logout"),
}

CANONICAL_EVENT_NAMES: frozenset[str] = frozenset(n for names in EVENT_FAMILIES.values() for n in names)


def allowed_text(values: list[str]) -> str:
    """How a refusal of a value outside a closed set names the values taken, so a sender can fix it."""
    return f"allowed: {', '.join(values)}"


# A batch's refusal of an unknown name (`UNKNOWN_EVENT_NAME`) in the words the error envelope uses.
ALLOWED_NAMES_TEXT = allowed_text(sorted(CANONICAL_EVENT_NAMES))
