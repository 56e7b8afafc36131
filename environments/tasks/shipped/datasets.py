"""Seeded CSV datasets for the data-analysis tasks: realistic columns, missing values, dates, categories.

Each domain function takes a ``numpy.random.Generator`` and returns a ``Dataset``: the frame and the
roles of its columns, which the question templates use to ask sensible questions. Same seed, same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True, slots=True)
class Dataset:
    domain: str
    title: str
    frame: pd.DataFrame
    date_col: str
    numeric: tuple[str, ...]
    """Numeric columns worth aggregating (some with missing values)."""
    categories: tuple[str, ...]
    """Low-cardinality text columns."""

    def __post_init__(self) -> None:
        missing = {self.date_col, *self.numeric, *self.categories} - set(self.frame.columns)
        if missing:
            raise ValueError(f"dataset {self.domain}: roles name absent columns {sorted(missing)}")


def _dates(rng: np.random.Generator, n: int, start: str, days: int) -> pd.Series:
    offsets = np.sort(rng.integers(0, days, size=n))
    return (pd.Timestamp(start) + pd.to_timedelta(offsets, unit="D")).strftime("%Y-%m-%d")


def _holes(rng: np.random.Generator, values: np.ndarray, share: float) -> np.ndarray:
    out = values.astype(float)
    out[rng.random(len(out)) < share] = np.nan
    return out


def _pick(rng: np.random.Generator, options: list[str], n: int, skew: float = 1.0) -> np.ndarray:
    weights = np.arange(len(options), 0, -1, dtype=float) ** skew
    return rng.choice(options, size=n, p=weights / weights.sum())


def sales(rng: np.random.Generator) -> Dataset:
    n = int(rng.integers(180, 320))
    start = f"{int(rng.integers(2019, 2024))}-01-01"
    frame = pd.DataFrame(
        {
            "order_id": np.arange(10001, 10001 + n),
            "order_date": _dates(rng, n, start, 365),
            "region": _pick(rng, ["North", "South", "East", "West", "Central"], n, rng.uniform(0.2, 1.2)),
            "category": _pick(rng, ["Electronics", "Grocery", "Apparel", "Home", "Toys", "Books"], n, 0.6),
            "unit_price": np.round(rng.lognormal(3.2, 0.8, n), 2),
            "quantity": rng.integers(1, 12, n),
            "discount": np.round(_holes(rng, rng.choice([0, 0.05, 0.1, 0.15, 0.2], n), 0.12), 2),
            "customer_type": _pick(rng, ["returning", "new", "wholesale"], n),
            "shipping_cost": np.round(_holes(rng, rng.gamma(2.0, 4.0, n), 0.08), 2),
        }
    )
    return Dataset(
        "sales",
        "Online store orders",
        frame,
        "order_date",
        ("unit_price", "quantity", "discount", "shipping_cost"),
        ("region", "category", "customer_type"),
    )


def clinic(rng: np.random.Generator) -> Dataset:
    n = int(rng.integers(200, 340))
    frame = pd.DataFrame(
        {
            "visit_id": [f"V{i:05d}" for i in rng.permutation(n) + 1],
            "visit_date": _dates(rng, n, f"{int(rng.integers(2020, 2025))}-03-01", 300),
            "clinic": _pick(rng, ["Riverside", "Hillcrest", "Lakeview", "Old Town"], n, 0.5),
            "department": _pick(
                rng, ["General", "Pediatrics", "Cardiology", "Dermatology", "Orthopedics"], n
            ),
            "patient_age": rng.integers(1, 95, n),
            "wait_minutes": np.round(_holes(rng, rng.gamma(3.0, 9.0, n), 0.1), 1),
            "cost": np.round(rng.normal(180, 60, n).clip(25), 2),
            "insured": _pick(rng, ["yes", "no"], n, 1.5),
            "satisfaction": _holes(rng, rng.integers(1, 6, n), 0.2),
        }
    )
    return Dataset(
        "clinic",
        "Outpatient clinic visits",
        frame,
        "visit_date",
        ("patient_age", "wait_minutes", "cost", "satisfaction"),
        ("clinic", "department", "insured"),
    )


def weather(rng: np.random.Generator) -> Dataset:
    stations = ["Aberdeen", "Bristol", "Cardiff", "Dover", "Exeter"][: int(rng.integers(3, 6))]
    days = int(rng.integers(50, 80))
    dates = pd.date_range(f"{int(rng.integers(2015, 2024))}-0{int(rng.integers(1, 7))}-01", periods=days)
    rows = [(s, d) for s in stations for d in dates]
    n = len(rows)
    normal_c = {"Aberdeen": 8, "Bristol": 12, "Cardiff": 11, "Dover": 13, "Exeter": 14}
    base = np.array([normal_c[s] for s, _ in rows])
    frame = pd.DataFrame(
        {
            "station": [s for s, _ in rows],
            "date": [d.strftime("%Y-%m-%d") for _, d in rows],
            "temp_c": np.round(_holes(rng, base + rng.normal(0, 4, n), 0.05), 1),
            "humidity_pct": rng.integers(45, 100, n),
            "rain_mm": np.round(_holes(rng, rng.exponential(2.5, n) * (rng.random(n) < 0.55), 0.07), 1),
            "wind_kmh": np.round(rng.gamma(2.5, 6.0, n), 1),
            "condition": _pick(rng, ["cloudy", "sunny", "rain", "fog", "storm"], n),
        }
    )
    return Dataset(
        "weather",
        "Daily weather station readings",
        frame,
        "date",
        ("temp_c", "humidity_pct", "rain_mm", "wind_kmh"),
        ("station", "condition"),
    )


def staff(rng: np.random.Generator) -> Dataset:
    n = int(rng.integers(150, 260))
    level = _pick(rng, ["junior", "mid", "senior", "lead"], n, 0.8)
    pay = {"junior": 42000, "mid": 58000, "senior": 76000, "lead": 95000}
    frame = pd.DataFrame(
        {
            "employee_id": [f"E{i:04d}" for i in rng.choice(9000, n, replace=False) + 1000],
            "hire_date": _dates(rng, n, "2012-01-01", 4000),
            "department": _pick(
                rng, ["Engineering", "Sales", "Support", "Finance", "Marketing", "Legal"], n, 0.7
            ),
            "level": level,
            "salary": np.round([pay[lv] * rng.uniform(0.85, 1.2) for lv in level], -2),
            "city": _pick(rng, ["Berlin", "Lisbon", "Toronto", "Austin", "Remote"], n, 0.4),
            "overtime_hours": np.round(_holes(rng, rng.gamma(1.5, 5.0, n), 0.15), 1),
            "rating": _holes(rng, np.round(rng.normal(3.4, 0.7, n).clip(1, 5), 1), 0.18),
        }
    )
    return Dataset(
        "staff",
        "Employee records",
        frame,
        "hire_date",
        ("salary", "overtime_hours", "rating"),
        ("department", "level", "city"),
    )


def web(rng: np.random.Generator) -> Dataset:
    n = int(rng.integers(250, 400))
    converted = rng.random(n) < rng.uniform(0.08, 0.25)
    revenue = np.where(converted, np.round(rng.lognormal(3.6, 0.7, n), 2), np.nan)
    frame = pd.DataFrame(
        {
            "session_id": [f"s{x:07x}" for x in rng.choice(2**26, n, replace=False)],
            "day": _dates(rng, n, f"{int(rng.integers(2021, 2025))}-0{int(rng.integers(1, 9))}-01", 120),
            "device": _pick(rng, ["mobile", "desktop", "tablet"], n, 0.9),
            "country": _pick(rng, ["DE", "FR", "US", "BR", "IN", "JP"], n, 0.5),
            "channel": _pick(rng, ["organic", "ads", "email", "social", "referral"], n, 0.7),
            "pages_viewed": rng.integers(1, 25, n),
            "duration_s": np.round(_holes(rng, rng.lognormal(5.0, 0.9, n), 0.06)),
            "converted": converted.astype(int),
            "revenue": revenue,
        }
    )
    return Dataset(
        "web",
        "Website sessions",
        frame,
        "day",
        ("pages_viewed", "duration_s", "revenue"),
        ("device", "country", "channel"),
    )


def shipments(rng: np.random.Generator) -> Dataset:
    n = int(rng.integers(180, 300))
    frame = pd.DataFrame(
        {
            "shipment_id": [f"SH-{i}" for i in rng.choice(90000, n, replace=False) + 10000],
            "ship_date": _dates(rng, n, f"{int(rng.integers(2018, 2025))}-02-01", 200),
            "carrier": _pick(rng, ["FastFreight", "PostNet", "BlueLine", "Cargoo"], n, 0.6),
            "destination": _pick(rng, ["Lyon", "Porto", "Gdansk", "Milan", "Ghent", "Bergen"], n, 0.3),
            "weight_kg": np.round(rng.gamma(2.0, 6.0, n), 2),
            "distance_km": rng.integers(40, 2400, n),
            "transit_days": _holes(rng, rng.integers(1, 12, n), 0.1),
            "status": _pick(rng, ["delivered", "in_transit", "returned", "lost"], n, 2.0),
        }
    )
    return Dataset(
        "shipments",
        "Parcel shipments",
        frame,
        "ship_date",
        ("weight_kg", "distance_km", "transit_days"),
        ("carrier", "destination", "status"),
    )


DOMAINS: dict[str, Callable[[np.random.Generator], Dataset]] = {
    "sales": sales,
    "clinic": clinic,
    "weather": weather,
    "staff": staff,
    "web": web,
    "shipments": shipments,
}
