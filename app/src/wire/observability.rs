//! The Dashboard: `POST /admin/observability/`, its range and its aggregates.
//! Both are in the published document (`GET /openapi.json`), so their doc
//! comments are the schemas' descriptions.

use serde::{Deserialize, Serialize};

/// `POST /admin/observability/`: the range of the Dashboard. Either `hours`
/// back from now (default 24), or `from` and `to` (RFC 3339, UTC); and,
/// optionally, the audience whose top questions and content gaps to list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ObservabilityRequest {
    #[serde(default)]
    pub hours: Option<u32>,
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    /// `admin`, `everyone` or `role:NAME`: list the top questions and
    /// content gaps of the callers who read as that audience (default:
    /// every caller's).
    #[serde(default)]
    pub audience: Option<String>,
}

/// Sums over a bucket, a surface or the whole range. Spend and savings are
/// estimates from the configured model pricing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct MetricTotals {
    pub queries: i64,
    pub cache_hits: i64,
    pub hit_rate: f64,
    pub refusals: i64,
    pub estimated_spend_usd: f64,
    pub estimated_savings_usd: f64,
    /// Upper edge of the 10%-wide latency slot holding the 95th percentile.
    pub p95_ms: f64,
    /// Answers their askers rated helpful, and unhelpful.
    #[serde(default)]
    pub helpful: i64,
    #[serde(default)]
    pub unhelpful: i64,
    /// Helpful ratings per rating (absent without ratings).
    #[serde(default)]
    pub helpful_rate: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct MetricPoint {
    /// The bucket's start (RFC 3339, UTC).
    pub bucket: String,
    #[serde(flatten)]
    pub totals: MetricTotals,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct SurfaceMetrics {
    /// `playground`, `api`, `widget`, `mcp` or `cli`.
    pub surface: String,
    #[serde(flatten)]
    pub totals: MetricTotals,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct QueryCountView {
    /// The normalised question.
    pub query: String,
    pub count: i64,
}

/// Refused questions that mean the same thing: one content gap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct GapGroupView {
    /// The group's most asked question.
    pub label: String,
    /// How often any of its questions was refused.
    pub count: i64,
    /// Its questions, most asked first.
    pub questions: Vec<QueryCountView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct KeyUsageView {
    /// Absent for traffic no access key made (Playground, CLI).
    pub key_id: Option<String>,
    pub name: String,
    pub queries: i64,
    pub estimated_spend_usd: f64,
    /// The key's answers rated helpful, and unhelpful.
    #[serde(default)]
    pub helpful: i64,
    #[serde(default)]
    pub unhelpful: i64,
}

/// The answers one profile version served in the range, and their ratings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct VersionUsageView {
    pub version: i32,
    pub queries: i64,
    pub helpful: i64,
    pub unhelpful: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct FunnelStageView {
    pub stage: String,
    pub decision: String,
    pub reason: String,
    pub count: i64,
    /// What the stage's model calls cost (generation and escalation).
    pub estimated_spend_usd: f64,
}

/// The Dashboard's aggregates for a range, computed from rollups only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ObservabilityResponse {
    pub from: String,
    pub to: String,
    /// `hour` or `day`: the width of each point of `series`.
    pub granularity: String,
    pub totals: MetricTotals,
    pub series: Vec<MetricPoint>,
    pub surfaces: Vec<SurfaceMetrics>,
    /// The audience the question lists are of (absent: every caller's).
    #[serde(default)]
    pub audience: Option<String>,
    /// The audiences that asked in the range (`admin`, `everyone`,
    /// `role:NAME`).
    #[serde(default)]
    pub audiences: Vec<String>,
    pub top_queries: Vec<QueryCountView>,
    /// Refused questions, most asked first.
    pub content_gaps: Vec<QueryCountView>,
    /// Refused questions grouped by meaning (embedding similarity), most
    /// refused group first.
    #[serde(default)]
    pub gap_groups: Vec<GapGroupView>,
    pub keys: Vec<KeyUsageView>,
    /// Per profile version (newest first): answers served and their ratings.
    #[serde(default)]
    pub versions: Vec<VersionUsageView>,
    /// Cache stages and the cost funnel: every (stage, decision) runs reached.
    pub funnel: Vec<FunnelStageView>,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use crate::wire::time;

    impl From<engine::metrics::Totals> for MetricTotals {
        fn from(t: engine::metrics::Totals) -> Self {
            Self {
                queries: t.queries,
                cache_hits: t.cache_hits,
                hit_rate: t.hit_rate,
                refusals: t.refusals,
                estimated_spend_usd: t.spend_usd,
                estimated_savings_usd: t.savings_usd,
                p95_ms: t.p95_ms,
                helpful: t.helpful,
                unhelpful: t.unhelpful,
                helpful_rate: t.helpful_rate,
            }
        }
    }

    impl From<engine::metrics::Dashboard> for ObservabilityResponse {
        fn from(d: engine::metrics::Dashboard) -> Self {
            let counts = |list: Vec<engine::metrics::QueryCount>| {
                list.into_iter().map(|c| QueryCountView { query: c.query, count: c.count }).collect()
            };
            Self {
                from: time(d.from),
                to: time(d.to),
                granularity: d.granularity.key().to_owned(),
                totals: d.totals.into(),
                series: d
                    .series
                    .into_iter()
                    .map(|p| MetricPoint { bucket: time(p.bucket), totals: p.totals.into() })
                    .collect(),
                surfaces: d
                    .surfaces
                    .into_iter()
                    .map(|s| SurfaceMetrics { surface: s.surface, totals: s.totals.into() })
                    .collect(),
                audience: d.audience,
                audiences: d.audiences,
                top_queries: counts(d.top_queries),
                content_gaps: counts(d.content_gaps),
                gap_groups: d
                    .gap_groups
                    .into_iter()
                    .map(|g| GapGroupView { label: g.label, count: g.count, questions: counts(g.questions) })
                    .collect(),
                keys: d
                    .keys
                    .into_iter()
                    .map(|k| KeyUsageView {
                        key_id: k.key_id,
                        name: k.name,
                        queries: k.queries,
                        estimated_spend_usd: k.spend_usd,
                        helpful: k.helpful,
                        unhelpful: k.unhelpful,
                    })
                    .collect(),
                versions: d
                    .versions
                    .into_iter()
                    .map(|v| VersionUsageView {
                        version: v.version,
                        queries: v.queries,
                        helpful: v.helpful,
                        unhelpful: v.unhelpful,
                    })
                    .collect(),
                funnel: d
                    .funnel
                    .into_iter()
                    .map(|f| FunnelStageView {
                        stage: f.stage,
                        decision: f.decision,
                        reason: f.reason,
                        count: f.count,
                        estimated_spend_usd: f.spend_usd,
                    })
                    .collect(),
            }
        }
    }
}
