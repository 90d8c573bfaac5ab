//! What a run did, stage by stage: the trace every answer and retrieval
//! carries. The stages' names live here once; the answer pipeline, the
//! streaming `/answer`, the widget's view, the recorded runs and the
//! Dashboard's funnel all read them from [`StageName`].

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// A stage of the answer pipeline (or of a retrieval), in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageName {
    Normalise,
    /// The readiness gate: after it, the run is answerable and only its
    /// own stages can fail it.
    Readiness,
    /// An answer the admin pinned to the question (or a close paraphrase).
    Pinned,
    ExactCache,
    SemanticCache,
    Retrieval,
    /// The reranker's reordering of the retrieved candidates (only while a
    /// rerank target is bound).
    Rerank,
    Refusal,
    Prompt,
    Generation,
    Grounding,
    /// The second opinion on statements the grounding check passed narrowly.
    Verification,
    Escalation,
    Answer,
}

impl StageName {
    /// Every stage, in pipeline order.
    pub const ALL: [StageName; 14] = [
        StageName::Normalise,
        StageName::Readiness,
        StageName::Pinned,
        StageName::ExactCache,
        StageName::SemanticCache,
        StageName::Retrieval,
        StageName::Rerank,
        StageName::Refusal,
        StageName::Prompt,
        StageName::Generation,
        StageName::Grounding,
        StageName::Verification,
        StageName::Escalation,
        StageName::Answer,
    ];

    /// The name on the wire, in recorded runs and in the funnel.
    pub fn key(self) -> &'static str {
        match self {
            StageName::Normalise => "normalise",
            StageName::Readiness => "readiness",
            StageName::Pinned => "pinned",
            StageName::ExactCache => "exact_cache",
            StageName::SemanticCache => "semantic_cache",
            StageName::Retrieval => "retrieval",
            StageName::Rerank => "rerank",
            StageName::Refusal => "refusal",
            StageName::Prompt => "prompt",
            StageName::Generation => "generation",
            StageName::Grounding => "grounding",
            StageName::Verification => "verification",
            StageName::Escalation => "escalation",
            StageName::Answer => "answer",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|name| name.key() == raw)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub stage: StageName,
    pub decision: String,
    pub reason: String,
    pub duration_ms: f64,
    /// What the stage's model call cost, when it made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The whole of what the stage weighed, where the reason is a bounded
    /// summary of it (the grounding check's every statement): shown on
    /// request, never instead of the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Stage {
    /// The stage as a visitor of a public page may see it: name, decision
    /// and duration. The reason names models, gates and targets' states, and
    /// the cost is the admin's.
    pub fn for_visitors(self) -> Stage {
        Stage { reason: String::new(), cost_usd: None, detail: None, ..self }
    }
}

/// Where a run reports each stage as it ends, for a caller that shows
/// progress (the streaming `/answer`).
pub type StageSink = tokio::sync::mpsc::UnboundedSender<Stage>;

/// The trace being written: each stage's duration runs from the end of the
/// one before.
pub struct Tracer {
    pub stages: Vec<Stage>,
    last: Instant,
    sink: Option<StageSink>,
}

impl Tracer {
    pub fn new(sink: Option<StageSink>) -> Self {
        Self { stages: Vec::new(), last: Instant::now(), sink }
    }

    pub fn stage(&mut self, stage: StageName, decision: &str, reason: impl Into<String>) {
        self.stage_costing(stage, decision, reason, None);
    }

    pub fn stage_costing(
        &mut self,
        stage: StageName,
        decision: &str,
        reason: impl Into<String>,
        cost: Option<f64>,
    ) {
        self.stage_detailed(stage, decision, reason, cost, None);
    }

    /// A stage whose reason summarises a longer `detail`.
    pub fn stage_detailed(
        &mut self,
        stage: StageName,
        decision: &str,
        reason: impl Into<String>,
        cost: Option<f64>,
        detail: Option<String>,
    ) {
        let now = Instant::now();
        let stage = Stage {
            stage,
            decision: decision.to_owned(),
            reason: reason.into(),
            duration_ms: (now - self.last).as_secs_f64() * 1000.0,
            cost_usd: cost,
            detail,
        };
        if let Some(sink) = &self.sink {
            // A caller that stopped listening does not stop the run.
            let _ = sink.send(stage.clone());
        }
        self.stages.push(stage);
        self.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stage_name_round_trips_and_serialises_as_its_key() {
        for name in StageName::ALL {
            assert_eq!(StageName::parse(name.key()), Some(name));
            assert_eq!(serde_json::to_value(name).unwrap(), serde_json::json!(name.key()));
        }
        let mut sorted = StageName::ALL;
        sorted.sort();
        assert_eq!(sorted, StageName::ALL, "ALL is in pipeline order");
        assert_eq!(StageName::parse("nonsense"), None);
    }
}
