//! The save gate: what judges a candidate version before it may serve, and
//! its verdict as stored on the version.

use super::*;

/// What judges a saved candidate before it serves. The profile stores what
/// the gate returns and never reads it beyond the verdict (its `gate`).
#[async_trait::async_trait]
pub trait SaveGate: Send + Sync {
    /// Whether saves are judged at all.
    async fn applies(&self, lore: &Corpus) -> Result<bool>;
    /// Judges `candidate` beside `serving`, telling `progress` how far it
    /// got; `None` when there turned out to be nothing to judge with.
    async fn judge(
        &self,
        lore: &Corpus,
        candidate: &Version,
        serving: &Version,
        progress: &judging::Tracker,
    ) -> Result<Option<Judged>>;
}

/// A gate's verdict on a candidate.
pub struct Judged {
    /// What the candidate's `evals` holds, its verdict under `gate`.
    pub evals: serde_json::Value,
    /// Why it is worse (none: it passed).
    pub regressions: Vec<String>,
}

/// The verdict in `evals` of a version the gate kept inactive and no admin
/// activated anyway: the version it was compared with, and why.
pub fn gate_refusal(evals: Option<&serde_json::Value>) -> Option<(i32, Vec<String>)> {
    let gate = evals?.get("gate")?;
    if gate.get("passed")?.as_bool()? || gate.get("activated_anyway").is_some_and(|by| !by.is_null()) {
        return None;
    }
    let baseline =
        gate.get("baseline_version").and_then(serde_json::Value::as_i64).and_then(|b| i32::try_from(b).ok());
    let regressions = gate.get("regressions").and_then(|r| serde_json::from_value(r.clone()).ok());
    Some((baseline.unwrap_or_default(), regressions.unwrap_or_default()))
}
