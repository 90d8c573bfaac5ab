//! `GET /metrics`: Prometheus (OpenMetrics) text, off unless
//! `metrics.enabled`, and behind `Authorization: Bearer <metrics.key>` when a
//! key is set.
//!
//! Request counts and latencies are counted in-process by [`record`], per
//! route pattern (bounded label values). Answers, cache hits, refusals and
//! spend come from the Dashboard's rollups and indexing runs from the job
//! table at scrape time, so they are the same numbers the Dashboard shows and
//! survive restarts.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use crate::AppState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SurfaceLabels {
    surface: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

type Latencies = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The in-process HTTP counters: shared (cheap clones) by the recording
/// layer and the scrape.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Latencies,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
        }
    }
}

/// Counts every request by its route pattern, method and status.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    // Methods outside HTTP's own are one label: a client inventing methods
    // must not grow the series without bound.
    let method = match request.method().as_str() {
        known @ ("GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" | "CONNECT" | "TRACE") => {
            known.to_owned()
        }
        _ => "other".to_owned(),
    };
    let started = Instant::now();
    let response = next.run(request).await;
    let metrics = &state.http_metrics;
    metrics
        .requests
        .get_or_create(&RequestLabels { route: route.clone(), method, status: response.status().as_u16() })
        .inc();
    metrics.latency.get_or_create(&RouteLabels { route }).observe(started.elapsed().as_secs_f64());
    response
}

/// Compares the bearer token with the key without leaking where they differ.
fn authorized(headers: &HeaderMap, key: &str) -> bool {
    let sent = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    Sha256::digest(sent.as_bytes()) == Sha256::digest(key.as_bytes())
}

/// `GET /metrics`.
pub async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let lore = &state.lore;
    let settings = &lore.settings.metrics;
    if !settings.enabled {
        return Err(ApiError::MetricsDisabled);
    }
    if let Some(key) = &settings.key {
        if !authorized(&headers, key.expose()) {
            return Err(ApiError::MetricsKeyRequired);
        }
    }

    let mut registry = Registry::with_prefix("lore");
    registry.register(
        "http_requests",
        "HTTP requests served, by route, method and status",
        state.http_metrics.requests.clone(),
    );
    registry.register(
        "http_request_duration_seconds",
        "HTTP request latency, by route",
        state.http_metrics.latency.clone(),
    );

    let answers = Family::<SurfaceLabels, Counter>::default();
    let hits = Family::<SurfaceLabels, Counter>::default();
    let refusals = Family::<SurfaceLabels, Counter>::default();
    let spend = Family::<SurfaceLabels, Counter<f64>>::default();
    let savings = Family::<SurfaceLabels, Counter<f64>>::default();
    for (surface, sums) in engine::metrics::totals_by_surface(lore).await? {
        let labels = SurfaceLabels { surface };
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        answers.get_or_create(&labels).inc_by(count(sums.queries));
        hits.get_or_create(&labels).inc_by(count(sums.cache_hits));
        refusals.get_or_create(&labels).inc_by(count(sums.refusals));
        spend.get_or_create(&labels).inc_by(sums.spend_usd);
        savings.get_or_create(&labels).inc_by(sums.savings_usd);
    }
    registry.register("answers", "Questions answered or refused, by surface", answers);
    registry.register("answer_cache_hits", "Answers served from the exact or semantic cache", hits);
    registry.register("answer_refusals", "Refused questions (content gaps and ungrounded answers)", refusals);
    registry.register("answer_estimated_spend_usd", "Estimated model spend, from configured pricing", spend);
    registry.register("answer_estimated_savings_usd", "Estimated spend the cache saved", savings);

    let jobs = Family::<StatusLabels, Gauge>::default();
    for (status, count) in engine::ingest::jobs::counts_by_status(lore).await? {
        jobs.get_or_create(&StatusLabels { status }).set(count);
    }
    registry.register("index_jobs", "Indexing runs, by status", jobs);

    let mut body = String::new();
    encode(&mut body, &registry)
        .map_err(|err| engine::Error::Internal(format!("encoding the metrics: {err}")))?;
    Ok(([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body)
        .into_response())
}
