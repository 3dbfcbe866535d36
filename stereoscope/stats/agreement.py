"""Inter-rater agreement from a long table of (unit, rater, value). No Django imports.

Coefficients: Krippendorff's alpha (nominal, ordinal, interval, ratio; via the `krippendorff` package), percent
agreement, Cohen's kappa per rater pair (unweighted and weighted) and their means, Fleiss' kappa, Gwet's AC1, and
bootstrap 95% confidence intervals over units.

Every coefficient is written as per-unit additive features plus a `finalize(totals)` step. The point estimate uses the
column totals; a bootstrap replicate uses the same totals weighted by how often each unit was drawn, so 1,000
resamples cost one sparse matrix product. A coefficient that is undefined returns None with a note, never NaN.
"""

from __future__ import annotations

import csv
import io
import math
import queue
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast

import krippendorff
import numpy as np

from stereoscope.lazy_imports import LazyModule

if TYPE_CHECKING:
    import numpy.typing as npt

# for annotations only (`from __future__ import annotations`: never evaluated when the module runs)
Array: TypeAlias = "npt.NDArray[Any]"
IntArray: TypeAlias = "npt.NDArray[np.int64]"
FloatArray: TypeAlias = "npt.NDArray[np.float64]"
# a rating's value: a number, or (nominal level) a code's name
Category: TypeAlias = int | float | str
Item = TypeVar("Item")
Result = TypeVar("Result")

sparse = LazyModule("scipy.sparse")

LEVELS = ("nominal", "ordinal", "interval", "ratio")
COEFFICIENTS = ("krippendorff_alpha", "percent_agreement", "fleiss_kappa", "cohen_kappa_mean", "gwet_ac1")
MISSING_STRINGS = {"", "na", "nan", "null", "none"}


class AgreementInputError(ValueError):
    """The ratings cannot be analysed as given (message says which row and why)."""


# --------------------------------------------------------------------------------------------------- the data
@dataclass
class RatingMatrix:
    """raters × units; `codes` holds category indices (-1 = missing) into `categories` (sorted values)."""

    units: list[Any]  # the caller's labels (output ids, rater keys): hashable, any type
    raters: list[Any]
    codes: IntArray
    categories: list[Category]
    level: str = "nominal"

    @property
    def numeric(self) -> bool:
        return all(
            isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool) for c in self.categories
        )

    @property
    def n_ratings(self) -> int:
        return int((self.codes >= 0).sum())

    def values(self) -> FloatArray:
        """raters × units float matrix with NaN for missing (numeric categories only)."""
        cats = np.asarray(self.categories, dtype=float) if self.categories else np.zeros(0)
        out = np.full(self.codes.shape, np.nan)
        mask = self.codes >= 0
        out[mask] = cats[self.codes[mask]]
        return out

    def value_counts(self) -> IntArray:
        """units × categories: how many raters gave each category to each unit."""
        n_units, n_cat = self.codes.shape[1], len(self.categories)
        mask = self.codes >= 0
        unit_idx = np.broadcast_to(np.arange(n_units), self.codes.shape)[mask]
        flat = np.bincount(unit_idx * n_cat + self.codes[mask], minlength=n_units * n_cat)
        return flat.reshape(n_units, n_cat).astype(np.int64)

    def subset(
        self, rater_indices: Sequence[int] | None = None, unit_indices: Sequence[int] | None = None
    ) -> RatingMatrix:
        codes = self.codes
        raters, units = self.raters, self.units
        if rater_indices is not None:
            codes = codes[list(rater_indices)]
            raters = [raters[i] for i in rater_indices]
        if unit_indices is not None:
            codes = codes[:, list(unit_indices)]
            units = [units[i] for i in unit_indices]
        return RatingMatrix(
            units=list(units), raters=list(raters), codes=codes, categories=self.categories, level=self.level
        )


def _is_missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in MISSING_STRINGS


def _as_number(value: object) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() else number


def from_long(
    rows: Iterable[Sequence[Any]],
    level: str = "nominal",
    *,
    units: Sequence[Hashable] | None = None,
    raters: Sequence[Hashable] | None = None,
    first_row: int = 1,
    row_label: str = "Row",
) -> RatingMatrix:
    """Build a RatingMatrix from (unit, rater, value) triples. Empty value = missing.

    Values must be numbers except at the nominal level, where strings (code names) are allowed. A rater who rates
    the same unit twice is an error. `units`/`raters` fix the order (and add units nobody rated).
    """
    if level not in LEVELS:
        raise AgreementInputError(f"Unknown level {level!r}; choose one of {', '.join(LEVELS)}.")
    unit_index: dict[Any, int] = {u: i for i, u in enumerate(units)} if units is not None else {}
    rater_index: dict[Any, int] = {r: i for i, r in enumerate(raters)} if raters is not None else {}
    unit_list: list[Any] = list(units) if units is not None else []
    rater_list: list[Any] = list(raters) if raters is not None else []
    cells: dict[tuple[int, int], Category | None] = {}
    raw_values: list[Category] = []
    for line, row in enumerate(rows, start=first_row):
        try:
            unit, rater, value = row
        except (TypeError, ValueError):
            raise AgreementInputError(f"{row_label} {line}: expected (unit, rater, value), got {row!r}.") from None
        if _is_missing(unit) or _is_missing(rater):
            raise AgreementInputError(f"{row_label} {line}: unit and rater must not be empty.")
        if unit not in unit_index:
            if units is not None:
                raise AgreementInputError(f"{row_label} {line}: unknown unit {unit!r}.")
            unit_index[unit] = len(unit_list)
            unit_list.append(unit)
        if rater not in rater_index:
            if raters is not None:
                raise AgreementInputError(f"{row_label} {line}: unknown rater {rater!r}.")
            rater_index[rater] = len(rater_list)
            rater_list.append(rater)
        key = (rater_index[rater], unit_index[unit])
        if key in cells:
            raise AgreementInputError(f"{row_label} {line}: rater {rater!r} rated unit {unit!r} more than once.")
        if _is_missing(value):
            cells[key] = None
            continue
        number: Category | None = _as_number(value)
        if number is None:
            if level != "nominal":
                raise AgreementInputError(
                    f"{row_label} {line}: value {value!r} is not a number; the {level} level needs numbers "
                    "(strings are allowed at the nominal level only)."
                )
            number = str(value).strip()
        cells[key] = number
        raw_values.append(number)
    kinds = {isinstance(v, str) for v in raw_values}
    if kinds == {True, False}:  # mixed numbers and names: treat all as names at the nominal level
        cells = {k: (None if v is None else str(v)) for k, v in cells.items()}
    categories = sorted({v for v in cells.values() if v is not None})
    cat_index = {c: i for i, c in enumerate(categories)}
    codes = np.full((len(rater_list), len(unit_list)), -1, dtype=np.int64)
    for (r, u), v in cells.items():
        if v is not None:
            codes[r, u] = cat_index[v]
    return RatingMatrix(units=unit_list, raters=rater_list, codes=codes, categories=categories, level=level)


def read_long_csv(text: str, level: str = "nominal") -> RatingMatrix:
    """Parse CSV text with the columns unit,rater,value (any order, extra columns ignored)."""
    text = text.lstrip("\ufeff")
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    missing = [c for c in ("unit", "rater", "value") if c not in header]
    if missing:
        raise AgreementInputError(
            f"The CSV needs the columns unit,rater,value; missing: {', '.join(missing)} "
            f"(found: {', '.join(header) or 'no header'})."
        )
    fast = _read_plain_long_csv(text, header, level)
    if fast is not None:
        return fast
    reader.fieldnames = header
    rows: list[tuple[str, str, str]] = []
    for line, record in enumerate(reader, start=2):
        if None in record or any(record.get(c) is None for c in ("unit", "rater", "value")):
            raise AgreementInputError(f"Line {line}: expected {len(header)} fields.")
        rows.append((record["unit"].strip(), record["rater"].strip(), record["value"]))
    return from_long(rows, level=level, first_row=2, row_label="Line")


def _factorize_stripped(column: Array) -> tuple[IntArray, list[str]]:
    """(index per row, distinct stripped values in order of first appearance) of an object column (pandas)."""
    import pandas as pd  # lazy: pandas takes ~0.5 s to import; only files numpy cannot read need it

    codes, raw = pd.factorize(column)
    stripped = [value.strip() for value in raw]
    remap, distinct = pd.factorize(np.asarray(stripped, dtype=object))
    return remap[codes], list(distinct)


def _pandas_columns(text: str, wanted: list[int]) -> list[tuple[IntArray, list[str]]] | None:
    """The unit, rater and value columns as (index per row, distinct stripped values), read by pandas' C parser."""
    try:
        import pandas as pd  # lazy: pandas takes ~0.5 s to import; only files numpy cannot read need it

        frame = pd.read_csv(
            io.StringIO(text), header=0, usecols=wanted, dtype=str, na_filter=False, engine="c", index_col=False
        )
    except (ImportError, ValueError):
        return None
    return [_factorize_stripped(frame.iloc[:, sorted(wanted).index(i)].to_numpy(dtype=object)) for i in wanted]


PAD = 72  # zero bytes after the text: room for an 8-byte read at any field start and a 64-byte window


def _field_keys(padded: Array, n_bytes: int, starts: IntArray, lengths: IntArray, width: int) -> Array:
    """One key per field: the field's bytes, zero-padded, as a big-endian integer (width <= 8) or a fixed-width byte
    string. No NUL bytes in the text, so zero padding cannot make two different fields equal."""
    if width <= 8:  # the 8 bytes from each field's start as one integer, bytes past its end zeroed
        eight = np.ndarray((n_bytes,), dtype=">u8", buffer=padded, strides=(1,))
        ones = np.uint64(2**64 - 1)
        masks = np.array([0] + [int(ones) ^ ((1 << (64 - 8 * n)) - 1) for n in range(1, 9)], dtype=np.uint64)
        return eight[starts].astype(np.uint64) & masks[lengths]
    window = np.lib.stride_tricks.sliding_window_view(padded, width)[starts]
    return np.where(np.arange(width) < lengths[:, None], window, np.uint8(0)).view(f"S{width}").ravel()


def _factorize_keys(keys: Array, width: int) -> tuple[IntArray, IntArray]:
    """(index of each key's distinct value, first position of each distinct value), distinct values in any order."""
    if width <= 2:  # few possible keys: a lookup table
        small = (keys >> np.uint64(48)).astype(np.int64)
        table = np.zeros(1 << 16, dtype=np.int64)
        present = np.flatnonzero(np.bincount(small, minlength=1 << 16))
        table[present] = np.arange(len(present))
        inverse = table[small]
        first = np.full(len(present), len(keys), dtype=np.int64)
        np.minimum.at(first, inverse, np.arange(len(keys)))
        return inverse, first
    # sort; the first position in each run of equal keys is the smallest position of that value
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return inverse, np.minimum.reduceat(order, np.flatnonzero(new))


def _factorize_bytes(
    padded: Array, n_bytes: int, text: str, starts: IntArray, ends: IntArray
) -> tuple[IntArray, list[str]] | None:
    """(index per row, distinct strings in order of first appearance) of the fields padded[starts:ends] of printable
    ASCII text (padded: its n_bytes bytes and PAD zero bytes): each field packed into one integer (up to 8 bytes) or
    a fixed-width byte string, then sorted (or looked up in a table when it has at most 2 bytes). Consecutive rows
    with the same field (a unit's rows written together) are factorized once. None for fields longer than 64 bytes
    (the caller then reads the file with pandas)."""
    lengths = ends - starts
    width = int(lengths.max()) if len(lengths) else 0
    if width > 64:
        return None
    keys = _field_keys(padded, n_bytes, starts, lengths, width)
    runs = None
    if len(keys) > 1:
        changed = np.empty(len(keys), dtype=bool)
        changed[0] = True
        np.not_equal(keys[1:], keys[:-1], out=changed[1:])
        if 2 * np.count_nonzero(changed) < len(keys):
            runs = np.flatnonzero(changed)  # the first row of each run; runs are in row order
            keys = keys[runs]
    inverse, first = _factorize_keys(keys, width)
    appearance = np.argsort(first)  # distinct values in order of first appearance (first indices are distinct)
    rank = np.empty(len(appearance), dtype=np.int64)
    rank[appearance] = np.arange(len(appearance))
    firsts = first[appearance]
    index = rank[inverse]
    if runs is not None:
        firsts = runs[firsts]
        index = np.repeat(index, np.diff(np.append(runs, len(starts))))
    distinct = [text[a:b] for a, b in zip(starts[firsts].tolist(), ends[firsts].tolist(), strict=True)]
    return index, distinct


def _ascii_columns(
    padded: Array, n_bytes: int, text: str, starts: IntArray, stops: IntArray, commas: IntArray, wanted: list[int]
) -> list[tuple[IntArray, list[str]]] | None:
    """The unit, rater and value columns as (index per row, distinct stripped values), straight from the bytes of a
    plain CSV of printable ASCII (rows from starts to stops, their commas in the rows of `commas`; checked by the
    caller). None when the text has other characters (Python's strip() knows more whitespace than the space) or long
    fields."""
    raw = padded[:n_bytes]
    newlines = int(np.count_nonzero(raw == 10))
    if np.count_nonzero((raw - np.uint8(32)) > np.uint8(94)) != newlines:  # bytes below 32 wrap round past 94
        return None
    nonspace = None
    if np.count_nonzero(raw == 32):
        nonspace = np.append(np.flatnonzero(raw != 32), n_bytes)
    n_fields = commas.shape[1] + 1
    columns = []
    for j in wanted:
        begin = starts if j == 0 else commas[:, j - 1] + 1
        end = stops if j == n_fields - 1 else commas[:, j]
        if nonspace is not None:  # strip spaces: first and last non-space byte inside the field
            first = nonspace[np.searchsorted(nonspace, begin)]
            last = nonspace[np.searchsorted(nonspace, end) - 1] + 1
            empty = first >= end
            begin, end = np.where(empty, begin, first), np.where(empty, begin, last)
        column = _factorize_bytes(padded, n_bytes, text, begin, end)
        if column is None:
            return None
        columns.append(column)
    return columns


def _distinct_cells(distinct: list[str], level: str) -> list[Category | None] | None:
    """Each distinct value as a cell: None when missing, a number, or (nominal only) a name; None when a value is
    neither missing nor a number at a numeric level. Mixed numbers and names are all names."""
    cells: list[Category | None] = []
    for value in distinct:
        if _is_missing(value):
            cells.append(None)
            continue
        number: Category | None = _as_number(value)
        if number is None:
            if level != "nominal":
                return None
            number = str(value).strip()
        cells.append(number)
    present = [v for v in cells if v is not None]
    if {isinstance(v, str) for v in present} == {True, False}:
        cells = [None if v is None else str(v) for v in cells]
    return cells


def _plain_rows(ends: IntArray, comma_at: IntArray, n_fields: int) -> tuple[IntArray, IntArray, IntArray | None] | None:
    """(starts, stops, commas) of the data rows (the non-empty lines after the header) when every one has
    n_fields - 1 commas, commas being their positions row by row (None when the header has another number); None
    when a row has another number of commas, or there is none."""
    n_lines = len(ends)
    if n_lines < 2:
        return None
    if len(comma_at) == n_lines * (n_fields - 1):  # no empty line: each line's commas must lie inside it
        groups = comma_at.reshape(n_lines, n_fields - 1)
        if groups[0, -1] < ends[0] and np.all(groups[1:, 0] > ends[:-1]) and np.all(groups[:, -1] < ends):
            return ends[:-1] + 1, ends[1:], groups[1:]
    per_line = np.diff(np.concatenate([[0], np.searchsorted(comma_at, ends)]))  # commas on each line
    length = np.diff(np.concatenate([[-1], ends])) - 1
    if np.any((length[1:] > 0) & (per_line[1:] != n_fields - 1)):
        return None
    line_starts = np.concatenate([[0], ends[:-1] + 1])
    data = length[1:] > 0
    starts, stops = line_starts[1:][data], ends[1:][data]
    commas = None
    if per_line[0] == n_fields - 1 and length[0] > 0:
        commas = comma_at[n_fields - 1 :].reshape(-1, n_fields - 1)
    return starts, stops, commas


def _read_plain_long_csv(text: str, header: list[str], level: str) -> RatingMatrix | None:
    """The same RatingMatrix as `from_long` for a plain CSV (no quotes, one comma count on every non-empty line), read
    vectorised: from the bytes with numpy when the text is printable ASCII, else with pandas' C parser. None when the
    file is not plain or anything would be an error: the row-by-row path then reports the offending line."""
    if '"' in text or len(set(header)) != len(header):
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            return None
    encoded = text.encode("utf-8")
    padded = np.zeros(len(encoded) + PAD, dtype=np.uint8)
    padded[: len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
    raw = padded[: len(encoded)]
    ends = np.flatnonzero(raw == 10)
    if not len(ends) or ends[-1] != len(raw) - 1:
        ends = np.append(ends, len(raw))
    rows = _plain_rows(ends, np.flatnonzero(raw == 44), len(header))
    if rows is None:
        return None
    starts, stops, commas = rows
    wanted = [header.index(c) for c in ("unit", "rater", "value")]
    columns = None
    if commas is not None:
        columns = _ascii_columns(padded, len(encoded), text, starts, stops, commas, wanted)
    if columns is None:
        columns = _pandas_columns(text, wanted)
    if columns is None or not len(columns[0][0]):
        return None
    (unit_idx, unit_list), (rater_idx, rater_list), (value_idx, distinct) = columns
    for names in (unit_list, rater_list):
        if MISSING_STRINGS.intersection(map(str.lower, names)):
            return None  # a row without unit or rater
    key = rater_idx.astype(np.int64) * len(unit_list) + unit_idx
    if np.bincount(key, minlength=len(unit_list) * len(rater_list)).max() > 1:
        return None  # someone rated a unit twice
    cells = _distinct_cells(distinct, level)
    if cells is None:
        return None
    categories = sorted({v for v in cells if v is not None})
    cat_index = {c: i for i, c in enumerate(categories)}
    value_code = np.array([-1 if v is None else cat_index[v] for v in cells], dtype=np.int64)
    codes = np.full((len(rater_list), len(unit_list)), -1, dtype=np.int64)
    codes[rater_idx, unit_idx] = value_code[value_idx]
    return RatingMatrix(units=unit_list, raters=rater_list, codes=codes, categories=categories, level=level)


def from_matrix(
    values: Any,
    level: str = "nominal",
    *,
    raters: Iterable[Hashable] | None = None,
    units: Iterable[Hashable] | None = None,
) -> RatingMatrix:
    """raters × units array-like with NaN (or None) for missing; numeric values."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 2:
        raise AgreementInputError("Expected a raters × units matrix.")
    mask = ~np.isnan(arr)
    categories, inverse = np.unique(arr[mask], return_inverse=True)
    codes = np.full(arr.shape, -1, dtype=np.int64)
    codes[mask] = inverse
    cats: list[Category] = [int(c) if float(c).is_integer() else float(c) for c in categories]
    return RatingMatrix(
        units=list(units) if units is not None else list(range(arr.shape[1])),
        raters=list(raters) if raters is not None else list(range(arr.shape[0])),
        codes=codes,
        categories=cats,
        level=level,
    )


# ------------------------------------------------------------------------------------------ coefficient parts
@dataclass
class Outcome:
    value: float | None
    note: str = ""


def _ok(value: Any) -> Outcome:
    value = float(value)
    if not math.isfinite(value):
        return Outcome(None, "the coefficient is not a finite number for these data")
    return Outcome(value)


def _distance_matrix(categories: Sequence[Category], level: str, n_v: Array | None) -> Array:
    """Squared distances δ² between categories (Krippendorff 2011), given the pairable-value counts n_v."""
    k = len(categories)
    distances: Array  # numpy's stubs type the arithmetic below as Any
    if level == "nominal":
        distances = 1.0 - np.eye(k)
        return distances
    values = np.asarray(categories, dtype=float)
    if level == "interval":
        distances = (values[:, None] - values[None, :]) ** 2
        return distances
    if level == "ratio":
        total = values[:, None] + values[None, :]
        diff = values[:, None] - values[None, :]
        distances = np.divide(diff, total, out=np.zeros((k, k)), where=total != 0) ** 2
        return distances
    assert n_v is not None, "the ordinal distances need the pairable-value counts"
    cum = np.concatenate([[0.0], np.cumsum(n_v)])  # ordinal
    i = np.arange(k)
    lo, hi = np.minimum.outer(i, i), np.maximum.outer(i, i)
    between = cum[hi + 1] - cum[lo]
    distances = (between - (n_v[lo] + n_v[hi]) / 2.0) ** 2
    return distances


def _weight_matrix(categories: Sequence[Category] | None, weights: str | None, k: int) -> FloatArray:
    """Disagreement weights: None → nominal 0/1; "linear" |i-j| or "quadratic" (i-j)² on the values, scaled."""
    if weights is None:
        return 1.0 - np.eye(k)
    values = np.asarray(categories if categories is not None else range(k), dtype=float)
    span = values.max() - values.min() if k > 1 else 0.0
    diff: FloatArray = np.abs(values[:, None] - values[None, :]) / (span if span else 1.0)
    return diff if weights == "linear" else diff**2


class _Vec:
    """A coefficient over B rows of totals: values (NaN = undefined) and the reasons, first one wins."""

    def __init__(self, values: Any, reasons: Iterable[tuple[Any, str]]) -> None:
        self.values = np.asarray(values, dtype=float).copy()
        self.reasons = [
            (np.broadcast_to(np.asarray(mask, dtype=bool), self.values.shape), note) for mask, note in reasons
        ]
        for mask, _note in self.reasons:
            self.values[mask] = np.nan
        self.values[~np.isfinite(self.values)] = np.nan

    def outcome(self, row: int = 0) -> Outcome:
        value = self.values[row]
        if np.isfinite(value):
            return Outcome(float(value))
        for mask, note in self.reasons:
            if mask[row]:
                return Outcome(None, note)
        return Outcome(None, "the coefficient is not a finite number for these data")


def _unique_columns(codes: IntArray, k: int) -> tuple[IntArray, IntArray, IntArray]:
    """Distinct columns of a raters × units code matrix: (patterns × raters, unit → pattern, counts).

    Columns are packed into one integer in base k+1 when that fits in 62 bits (a 1-D unique is far faster than
    np.unique(axis=0)); otherwise the row-wise unique is used.
    """
    n_raters = codes.shape[0]
    base = k + 1
    if n_raters * math.log2(base) < 62:
        weights = base ** np.arange(n_raters, dtype=np.int64)
        keys = (codes + 1).T.astype(np.int64) @ weights
        uniq, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        return codes[:, first].T, inverse.ravel(), counts
    patterns, inverse, counts = np.unique(codes.T, axis=0, return_inverse=True, return_counts=True)
    return patterns, inverse.ravel(), counts


def _background_iter(generator: Iterable[Item], ahead: int = 2) -> Iterator[Item]:
    """The items of `generator`, computed in a thread started at once, up to `ahead` items ahead of the consumer (in
    order). A consumer that stops early (an error), or drops the iterator unread, lets the thread end."""

    items: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def hand_over(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in generator:
                if not hand_over((True, item)):
                    return
        except BaseException as exc:  # handed to the consumer
            hand_over((False, exc))
        else:
            hand_over((False, None))

    def consume(_stops_when_dropped: _StopToken) -> Iterator[Item]:
        try:
            while True:
                ok, item = items.get()
                if not ok:
                    if item is not None:
                        raise item
                    return
                yield item
        finally:
            stop.set()

    token = _StopToken()
    weakref.finalize(token, stop.set)  # the iterator holds the token: dropping it unread stops the thread
    threading.Thread(target=produce, daemon=True).start()
    return consume(token)


class _StopToken:
    """Held by a background iterator; when it goes, the thread filling it stops."""


def _in_background(function: Callable[..., Result], *args: Any, **kwargs: Any) -> Callable[[], Result]:
    """Start `function(*args, **kwargs)` in a thread; the returned callable waits for its result (or raises)."""

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = function(*args, **kwargs)
        except BaseException as exc:  # raised again in the caller
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result() -> Result:
        thread.join()
        if "error" in box:
            raise box["error"]
        value: Result = box["value"]
        return value

    return result


class _Features:
    """Additive features of every coefficient, per distinct rating pattern (a column of the raters × units matrix).

    Units with the same pattern contribute the same features, so totals are `pattern counts @ features`, and a
    bootstrap replicate (units drawn with replacement) is a multinomial draw of pattern counts.
    """

    def __init__(self, rm: RatingMatrix, weights: str | None = "linear", *, resamples: int = 0, seed: int = 0) -> None:
        """resamples > 0 starts drawing that many bootstrap resamples (seeded with `seed`) in a thread at once, while
        the features are built: `resampled_totals(resamples, None, self.early_draws)` takes them."""
        self.rm = rm
        self.k = k = len(rm.categories)
        self.weights = weights
        n_raters, n_units = rm.codes.shape
        if n_units:
            patterns, self.inverse, self.freq = _unique_columns(rm.codes, k)
        else:
            patterns, self.freq = np.zeros((0, n_raters), dtype=np.int64), np.zeros(0, dtype=np.int64)
            self.inverse = np.zeros(0, dtype=np.int64)
        self.freq = self.freq.astype(float)
        codes = patterns.T  # raters × patterns
        n = codes.shape[1]
        counts = np.zeros((n, k))
        if k:
            mask = codes >= 0
            pat_idx = np.broadcast_to(np.arange(n), codes.shape)[mask]
            counts = np.bincount(pat_idx * k + codes[mask], minlength=n * k).reshape(n, k).astype(float)
        self.m = m = counts.sum(axis=1)
        self.early_draws: Iterator[IntArray] | None = None
        if resamples and self.freq[m >= 2].sum() >= 2:  # the draws need only the pattern counts: start them now
            self.early_draws = self.draws(resamples, np.random.default_rng(seed))
        blocks: list[Any] = []  # scipy sparse matrices
        self.slices: dict[str | tuple[str, int, int], slice] = {}
        start = 0

        def add(name: str | tuple[str, int, int], block: Any) -> None:
            nonlocal start
            block = sparse.csr_matrix(block)
            self.slices[name] = slice(start, start + block.shape[1])
            start += block.shape[1]
            blocks.append(block)

        pairable = m >= 2
        denom = np.where(pairable, m * (m - 1), 1.0)
        same_pairs = (counts * (counts - 1)).sum(axis=1)
        rated = m >= 1
        add("pa", np.column_stack([np.where(pairable, same_pairs / denom, 0.0), pairable.astype(float)]))
        add("pi", np.column_stack([counts / np.where(rated, m, 1.0)[:, None], rated.astype(float)]))
        add("fleiss", np.column_stack([same_pairs, counts, m, rated.astype(float), m * m]))
        self.has_coinc = 0 < k <= 60
        if self.has_coinc:  # Krippendorff coincidences (n_uc n_uk - δ_ck n_uc) / (m_u - 1), block c = row c of o
            scale = np.where(pairable, 1.0 / np.where(pairable, m - 1, 1.0), 0.0)
            sp = sparse.csr_matrix(counts)
            rows = []
            for c in range(k):
                col = counts[:, c] * scale
                block = sparse.diags(col) @ sp - sparse.csr_matrix((col, (np.arange(n), np.full(n, c))), shape=(n, k))
                rows.append(block.tocsr())
            add("coinc", sparse.hstack(rows))
        self.pairs = list(combinations(range(n_raters), 2))
        for a, b in self.pairs:  # Cohen: one contingency table per rater pair
            ca, cb = codes[a], codes[b]
            both = np.nonzero((ca >= 0) & (cb >= 0))[0]
            add(
                ("pair", a, b),
                sparse.csr_matrix((np.ones(len(both)), (both, ca[both] * k + cb[both])), shape=(n, k * k)),
            )
        self.matrix = sparse.hstack(blocks).tocsr() if blocks else sparse.csr_matrix((n, 0))
        self.w_unweighted = _weight_matrix(None, None, k)
        self.w_weighted = _weight_matrix(rm.categories, weights, k) if (k and rm.numeric) else None

    def totals(self) -> FloatArray:
        """1 × features: the point-estimate totals."""
        return np.asarray(self.matrix.T @ self.freq).reshape(1, -1)

    def draws(self, n_boot: int, rng: np.random.Generator, block: int = 100) -> Iterator[IntArray]:
        """The multinomial pattern counts of n_boot resamples, in blocks of `block` rows, drawn by a thread started
        now. Consecutive draws from one generator: the same stream as one big call. numpy draws without the GIL, so
        the thread draws the next block while the caller multiplies the last."""
        n = int(self.freq.sum())
        p = self.freq / self.freq.sum()
        return _background_iter(
            rng.multinomial(n, p, size=min(block, n_boot - start)) for start in range(0, n_boot, block)
        )

    def resampled_totals(
        self, n_boot: int, rng: np.random.Generator | None, draws: Iterable[IntArray] | None = None
    ) -> FloatArray:
        """n_boot × features: totals for units drawn with replacement (multinomial over patterns); `draws`: the
        blocks of `self.draws(n_boot, rng)` when they were started already."""
        out = np.empty((n_boot, self.matrix.shape[1]), order="F")  # the layout the coefficients were summed in
        start = 0
        if draws is None:
            assert rng is not None, "no draws given: needs a generator to draw them"
            draws = self.draws(n_boot, rng)
        for block in draws:
            out[start : start + len(block)] = (self.matrix.T @ np.ascontiguousarray(block.T, dtype=float)).T
            start += len(block)
        return out

    # ----- coefficients over rows of totals
    def percent_agreement(self, T: FloatArray) -> _Vec:
        tot, units = T[:, self.slices["pa"]].T
        with np.errstate(all="ignore"):
            return _Vec(tot / units, [(units < 1, "no unit has ratings from two or more raters")])

    def gwet_ac1(self, T: FloatArray) -> _Vec:
        tot, units = T[:, self.slices["pa"]].T
        pi_block = T[:, self.slices["pi"]]
        with np.errstate(all="ignore"):
            pa = tot / units
            pi = pi_block[:, :-1] / pi_block[:, -1:]
            pe = (pi * (1 - pi)).sum(axis=1) / (self.k - 1) if self.k >= 2 else np.ones(len(T))
            values = (pa - pe) / (1 - pe)
        return _Vec(
            values,
            [
                (units < 1, "no unit has ratings from two or more raters"),
                (units < 2, "only one unit has two or more ratings"),
                (
                    np.full(len(T), self.k < 2),
                    "every rating has the same value, so chance agreement is undefined (q = 1)",
                ),
                (pe >= 1, "chance agreement is 1"),
            ],
        )

    def fleiss_kappa(self, T: FloatArray) -> _Vec:
        block = T[:, self.slices["fleiss"]]
        k = self.k
        same, counts, m_sum, units, m_sq = (
            block[:, 0],
            block[:, 1 : 1 + k],
            block[:, 1 + k],
            block[:, 2 + k],
            block[:, 3 + k],
        )
        with np.errstate(all="ignore"):
            m = m_sum / units
            unequal = np.abs(m_sq / units - m * m) > 1e-9 * np.maximum(1.0, m * m)
            p_bar = same / (units * m * (m - 1))
            p = counts / (units * m)[:, None]
            pe = (p * p).sum(axis=1)
            values = (p_bar - pe) / (1 - pe)
        return _Vec(
            values,
            [
                (units < 2, "needs at least two rated units"),
                (unequal, "does not apply: units have different numbers of ratings (use alpha or AC1)"),
                (m < 2, "needs at least two ratings per unit"),
                (pe >= 1 - 1e-12, "undefined: every rating has the same value"),
            ],
        )

    def krippendorff_alpha(self, T: FloatArray, level: str) -> _Vec:
        if not self.has_coinc:
            return _Vec(np.full(len(T), np.nan), [(True, "not bootstrapped for more than 60 distinct values")])
        k = self.k
        o = T[:, self.slices["coinc"]].reshape(-1, k, k)
        n_v = o.sum(axis=2)
        n = n_v.sum(axis=1)
        if level == "ordinal":
            cum = np.concatenate([np.zeros((len(T), 1)), np.cumsum(n_v, axis=1)], axis=1)
            i = np.arange(k)
            lo, hi = np.minimum.outer(i, i), np.maximum.outer(i, i)
            d = (cum[:, hi + 1] - cum[:, lo] - (n_v[:, lo] + n_v[:, hi]) / 2.0) ** 2
        else:
            d = _distance_matrix(self.rm.categories, level, None)[None, :, :]
        eye = np.eye(k)[None, :, :]
        with np.errstate(all="ignore"):
            expected = (n_v[:, :, None] * n_v[:, None, :] - eye * n_v[:, :, None]) / (n - 1)[:, None, None]
            de = (expected * d).sum(axis=(1, 2))
            values = 1 - (o * d).sum(axis=(1, 2)) / de
        return _Vec(
            values,
            [
                (((n_v > 0).sum(axis=1) < 2) | (n < 2), "fewer than two distinct pairable values"),
                (de <= 0, "no expected disagreement"),
            ],
        )

    def pair_table(self, T: FloatArray, a: int, b: int) -> FloatArray:
        return T[:, self.slices[("pair", a, b)]].reshape(-1, self.k, self.k)

    def cohen(self, T: FloatArray, a: int, b: int, weighted: bool = False) -> _Vec:
        table = self.pair_table(T, a, b)
        w = self.w_weighted if weighted else self.w_unweighted
        if w is None:
            return _Vec(np.full(len(T), np.nan), [(True, "weighted kappa needs numeric values")])
        n = table.sum(axis=(1, 2))
        with np.errstate(all="ignore"):
            p = table / n[:, None, None]
            expected = p.sum(axis=2)[:, :, None] * p.sum(axis=1)[:, None, :]
            de = (w * expected).sum(axis=(1, 2))
            values = 1 - (w * p).sum(axis=(1, 2)) / de
        return _Vec(
            values,
            [
                (n < 2, "fewer than two units rated by both"),
                (de <= 1e-12, "chance agreement is 1 (both raters used a single, identical value)"),
            ],
        )

    def cohen_mean(self, T: FloatArray, weighted: bool = False) -> _Vec:
        if not self.pairs:
            return _Vec(np.full(len(T), np.nan), [(True, "needs two raters")])
        stacked = np.vstack([self.cohen(T, a, b, weighted).values for a, b in self.pairs])
        defined = np.isfinite(stacked).sum(axis=0)
        with np.errstate(all="ignore"):
            values = np.nansum(stacked, axis=0) / defined
        return _Vec(values, [(defined == 0, "no rater pair has a defined kappa")])


def cohen_kappa_table(table: Any, categories: Sequence[Category] | None = None, weights: str | None = None) -> Outcome:
    """Cohen's kappa from a k × k contingency table (rows: rater A, columns: rater B).

    weights None = unweighted; "linear" or "quadratic" use disagreement weights |i-j| or (i-j)² on the category
    values (scaled to the range), as in Cicchetti & Allison / Fleiss & Cohen.
    """
    table = np.asarray(table, dtype=float)
    n = table.sum()
    if n < 2:
        return Outcome(None, "Cohen: fewer than two units rated by both")
    w = _weight_matrix(categories, weights, table.shape[0])
    p = table / n
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    de = float((w * expected).sum())
    if de <= 1e-12:
        return Outcome(None, "Cohen: chance agreement is 1 (both raters used a single, identical value)")
    return _ok(1 - float((w * p).sum()) / de)


# ----------------------------------------------------------------------------------------------- the report
@dataclass
class AgreementResult:
    level: str
    n_units: int
    n_raters: int
    n_ratings: int
    krippendorff_alpha: float | None = None
    percent_agreement: float | None = None
    fleiss_kappa: float | None = None
    cohen_kappa_mean: float | None = None
    cohen_kappa_weighted_mean: float | None = None
    gwet_ac1: float | None = None
    ci95: dict[str, list[float] | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The CLI / API object: exactly these keys."""
        return {
            "krippendorff_alpha": self.krippendorff_alpha,
            "percent_agreement": self.percent_agreement,
            "fleiss_kappa": self.fleiss_kappa,
            "cohen_kappa_mean": self.cohen_kappa_mean,
            "gwet_ac1": self.gwet_ac1,
            "n_units": self.n_units,
            "n_raters": self.n_raters,
            "n_ratings": self.n_ratings,
            "ci95": self.ci95,
            "notes": self.notes,
        }

    def as_dict(self) -> dict[str, Any]:
        out = self.summary()
        out.update(level=self.level, cohen_kappa_weighted_mean=self.cohen_kappa_weighted_mean, pairs=self.pairs)
        return out


def krippendorff_alpha(rm: RatingMatrix, level: str | None = None) -> Outcome:
    """Krippendorff's alpha through the `krippendorff` package; undefined cases → None + note."""
    level = level or rm.level
    if level != "nominal" and not rm.numeric:
        return Outcome(None, f"alpha at the {level} level needs numeric values")
    counts = rm.value_counts()
    if counts.shape[1] < 2:
        return Outcome(None, "alpha is undefined: every rating has the same value (no variation)")
    pairable_units = int((counts.sum(axis=1) >= 2).sum())
    if pairable_units == 0:
        return Outcome(None, "alpha is undefined: no unit was rated by two or more raters")
    if pairable_units < 2:
        return Outcome(None, "alpha is undefined: only one unit was rated by two or more raters")
    pairable_values = counts[counts.sum(axis=1) >= 2].sum(axis=0)
    if (pairable_values > 0).sum() < 2:
        return Outcome(None, "alpha is undefined: all pairable ratings have the same value (no variation)")
    domain = np.asarray(rm.categories, dtype=float) if rm.numeric else np.arange(len(rm.categories))
    with np.errstate(all="ignore"):
        try:
            value = krippendorff.alpha(
                value_counts=counts,
                value_domain=domain,
                # a level outside LEVELS makes the package raise ValueError (a note below)
                level_of_measurement=cast(Literal["nominal", "ordinal", "interval", "ratio"], level),
            )
        except (ValueError, ZeroDivisionError) as exc:
            return Outcome(None, f"alpha is undefined: {exc}")
    return _ok(value)


def agreement(
    rm: RatingMatrix,
    *,
    level: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    weights: str | None = "linear",
    include_pairs: bool = True,
) -> AgreementResult:
    """All coefficients, with bootstrap 95% percentile intervals over units (bootstrap=0 skips them)."""
    level = level or rm.level
    rm = RatingMatrix(rm.units, rm.raters, rm.codes, rm.categories, level)
    result = AgreementResult(level=level, n_units=len(rm.units), n_raters=len(rm.raters), n_ratings=rm.n_ratings)
    result.ci95 = {name: None for name in COEFFICIENTS}
    notes = result.notes

    def record(name: str, outcome: Outcome) -> None:
        setattr(result, name, outcome.value)
        if outcome.value is None and outcome.note:
            notes.append(f"{name}: {outcome.note}")

    if len(rm.raters) < 2:
        notes.append("only one rater: agreement needs at least two raters")
        return result
    if not rm.categories:
        notes.append("no ratings: every value is missing")
        return result

    # the resamples are drawn (from when the rating patterns are known) while the point estimates are computed
    feats = _Features(rm, weights=weights, resamples=bootstrap, seed=seed)
    T = feats.totals()
    pairable_units = int(feats.freq[feats.m >= 2].sum())
    resampled = None
    if feats.early_draws is not None:
        resampled = _in_background(feats.resampled_totals, bootstrap, None, feats.early_draws)
    one_unit = Outcome(None, "only one unit has two or more ratings")
    record("krippendorff_alpha", krippendorff_alpha(rm, level))
    record("percent_agreement", feats.percent_agreement(T).outcome())
    if pairable_units == 1:
        notes.append("only one unit has two or more ratings: chance-corrected coefficients are undefined")
    record("fleiss_kappa", feats.fleiss_kappa(T).outcome() if pairable_units >= 2 else one_unit)
    record("gwet_ac1", feats.gwet_ac1(T).outcome() if pairable_units >= 2 else one_unit)
    record("cohen_kappa_mean", feats.cohen_mean(T).outcome() if pairable_units >= 2 else one_unit)
    if rm.numeric:
        record(
            "cohen_kappa_weighted_mean",
            feats.cohen_mean(T, weighted=True).outcome() if pairable_units >= 2 else one_unit,
        )
    if include_pairs:
        for a, b in feats.pairs:
            table = feats.pair_table(T, a, b)[0]
            n_both = int(table.sum())
            u = feats.cohen(T, a, b).outcome()
            w = feats.cohen(T, a, b, weighted=True).outcome() if rm.numeric else Outcome(None)
            result.pairs.append(
                {
                    "rater_a": rm.raters[a],
                    "rater_b": rm.raters[b],
                    "n_units": n_both,
                    "percent_agreement": (float(np.trace(table)) / n_both) if n_both else None,
                    "kappa": u.value,
                    "weighted_kappa": w.value,
                    "note": u.note,
                }
            )
    if resampled is not None:
        result.ci95 = bootstrap_ci(feats, level, result, n_boot=bootstrap, seed=seed, totals=resampled())
    return result


def bootstrap_ci(
    feats: _Features,
    level: str,
    point: AgreementResult,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    totals: FloatArray | None = None,
) -> dict[str, list[float] | None]:
    """Percentile 95% intervals from resampling units with replacement (same seed → same interval).

    Replicates in which a coefficient is undefined are dropped and counted in a note; with fewer than half left the
    interval is null. `totals`: the resampled totals when they were drawn already (`agreement` draws them while it
    computes the point estimates).
    """
    T = feats.resampled_totals(n_boot, np.random.default_rng(seed)) if totals is None else totals
    vectors = {
        "krippendorff_alpha": lambda: feats.krippendorff_alpha(T, level),
        "percent_agreement": lambda: feats.percent_agreement(T),
        "fleiss_kappa": lambda: feats.fleiss_kappa(T),
        "cohen_kappa_mean": lambda: feats.cohen_mean(T),
        "gwet_ac1": lambda: feats.gwet_ac1(T),
    }
    out: dict[str, list[float] | None] = {}
    dropped: list[str] = []
    for name in COEFFICIENTS:
        if getattr(point, name) is None:
            out[name] = None
            continue
        values = vectors[name]().values
        ok = values[np.isfinite(values)]
        if len(ok) < 0.5 * n_boot:
            out[name] = None
            point.notes.append(f"ci95 {name}: undefined in more than half of the {n_boot} resamples")
            continue
        if len(ok) < n_boot:
            dropped.append(f"{name} {n_boot - len(ok)}")
        low, high = np.percentile(ok, [2.5, 97.5])
        out[name] = [float(low), float(high)]
    if point.krippendorff_alpha is not None and not feats.has_coinc:
        point.notes.append("ci95 krippendorff_alpha: not bootstrapped for more than 60 distinct values")
    if dropped:
        point.notes.append(
            "bootstrap: resamples where a coefficient was undefined were dropped (" + ", ".join(dropped) + ")"
        )
    return out


# ------------------------------------------------------------------------------------------- derived tables
def confusion(rm: RatingMatrix, rater_a: Hashable, rater_b: Hashable) -> dict[str, Any]:
    """Contingency table for two raters over the units both rated."""
    a, b = rm.raters.index(rater_a), rm.raters.index(rater_b)
    ca, cb = rm.codes[a], rm.codes[b]
    both = (ca >= 0) & (cb >= 0)
    k = len(rm.categories)
    table = np.zeros((k, k), dtype=int)
    np.add.at(table, (ca[both], cb[both]), 1)
    return {
        "categories": list(rm.categories),
        "table": table.tolist(),
        "n_units": int(both.sum()),
        "rater_a": rater_a,
        "rater_b": rater_b,
    }


def versus_majority(rm: RatingMatrix, rater: Hashable, **kwargs: Any) -> AgreementResult:
    """One rater against the majority value of the other raters per unit (ties and no-majority units are missing)."""
    r = rm.raters.index(rater)
    others = [i for i in range(len(rm.raters)) if i != r]
    k = len(rm.categories)
    counts = np.zeros((len(rm.units), k), dtype=int)
    for i in others:
        mask = rm.codes[i] >= 0
        np.add.at(counts, (np.nonzero(mask)[0], rm.codes[i][mask]), 1)
    majority = np.full(len(rm.units), -1)
    if k:
        top = counts.max(axis=1)
        winners = (counts == top[:, None]).sum(axis=1)
        ok = (top > 0) & (winners == 1) & (top * 2 > counts.sum(axis=1))
        majority[ok] = counts.argmax(axis=1)[ok]
    codes = np.vstack([rm.codes[r], majority])
    pair = RatingMatrix(rm.units, [rater, "majority of others"], codes, rm.categories, rm.level)
    return agreement(pair, **kwargs)


def disagreements(rm: RatingMatrix) -> list[int]:
    """Indices of units whose ratings are not all identical (among raters who rated it)."""
    counts = rm.value_counts()
    distinct = (counts > 0).sum(axis=1)
    return [int(i) for i in np.nonzero(distinct > 1)[0]]


# ------------------------------------------------------------------------------------------ segment matching
def span_overlap(a: Sequence[float], b: Sequence[float]) -> float:
    """Overlap share of two [start, end) spans: intersection / union (MAXQDA's 'overlap of segments')."""
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


def segment_agreement(
    spans_a: Sequence[tuple[Hashable, int, int]], spans_b: Sequence[tuple[Hashable, int, int]], min_overlap: float = 0.9
) -> dict[str, Any]:
    """MAXQDA-style segment agreement of two raters for one code in one document set.

    spans_x: list of (document, start, end). A segment of one rater counts as matched when the other rater has a
    segment of the same code in the same document overlapping by at least `min_overlap` (intersection / union).
    Returns the counts and the share of matched segments ((matched_a + matched_b) / (n_a + n_b)).
    """
    if not 0 < min_overlap <= 1:
        raise AgreementInputError("The overlap share must be in (0, 1].")
    n_a, n_b = len(spans_a), len(spans_b)
    m_a = m_b = 0
    if n_a and n_b:
        a = np.asarray([(hash(d), s, e) for d, s, e in spans_a], dtype=np.int64).reshape(-1, 3)
        b = np.asarray([(hash(d), s, e) for d, s, e in spans_b], dtype=np.int64).reshape(-1, 3)
        order_b = np.argsort(b[:, 0], kind="stable")
        b_sorted = b[order_b]
        lo = np.searchsorted(b_sorted[:, 0], a[:, 0], side="left")
        hi = np.searchsorted(b_sorted[:, 0], a[:, 0], side="right")
        counts = hi - lo
        ia = np.repeat(np.arange(n_a), counts)  # every (a, b) pair in the same document
        ib = (
            order_b[np.concatenate([np.arange(x, y) for x, y in zip(lo, hi, strict=True)])]
            if counts.sum()
            else np.zeros(0, dtype=np.int64)
        )
        if len(ia):
            sa, ea, sb, eb = a[ia, 1], a[ia, 2], b[ib, 1], b[ib, 2]
            inter = np.minimum(ea, eb) - np.maximum(sa, sb)
            union = np.maximum(ea, eb) - np.minimum(sa, sb)
            with np.errstate(all="ignore"):
                share = np.where((inter > 0) & (union > 0), inter / np.where(union > 0, union, 1), 0.0)
            ok = share >= min_overlap - 1e-12
            m_a = int(np.unique(ia[ok]).size)
            m_b = int(np.unique(ib[ok]).size)
    total = n_a + n_b
    return {
        "n_a": n_a,
        "n_b": n_b,
        "matched_a": m_a,
        "matched_b": m_b,
        "share_matched": (m_a + m_b) / total if total else None,
    }
