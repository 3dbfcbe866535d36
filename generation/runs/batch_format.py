"""Pure helpers of batch mode (no Django): custom ids, wire bodies, splitting at the providers' limits, prices."""

import json
import re
from decimal import Decimal

DEFAULT_BATCH_DISCOUNT = Decimal("0.5")  # OpenAI and Anthropic both charge half the live price in batch mode


def custom_id(unit_ref):
    """The unit's id as a custom_id both providers accept (Anthropic: 1-64 of [A-Za-z0-9_-])."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", unit_ref)[:64] or "unit"


def wire_body(request):
    """The JSON body the SDK sends for `create(**request)`: extra_body is merged into the top level."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


def line_size(line):
    """Bytes the line takes in a JSONL upload (with its newline)."""
    return len(json.dumps(line, ensure_ascii=False).encode()) + 1


def split(sizes, max_requests, max_bytes):
    """Index ranges [(start, stop)] cutting items of `sizes` bytes into parts of at most max_requests items and
    max_bytes bytes. An item larger than max_bytes alone raises ValueError."""
    parts, start, used = [], 0, 0
    for i, size in enumerate(sizes):
        if size > max_bytes:
            raise ValueError(f"One request is {size} bytes, more than a batch may hold ({max_bytes} bytes).")
        if i > start and (i - start >= max_requests or used + size > max_bytes):
            parts.append((start, i))
            start, used = i, 0
        used += size
    if start < len(sizes):
        parts.append((start, len(sizes)))
    return parts


def batch_prices(live_in, live_out, batch_in, batch_out):
    """Batch prices per million tokens: the endpoint's batch prices, else half its live prices (None: unpriced)."""

    def one(batch, live):
        if batch is not None:
            return Decimal(batch)
        return None if live is None else Decimal(live) * DEFAULT_BATCH_DISCOUNT

    return one(batch_in, live_in), one(batch_out, live_out)


def price(input_tokens, output_tokens, price_in, price_out):
    """USD for tokens at prices per million (None when both prices are None)."""
    if price_in is None and price_out is None:
        return None
    total = Decimal(input_tokens or 0) * (price_in or 0) + Decimal(output_tokens or 0) * (price_out or 0)
    return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))
