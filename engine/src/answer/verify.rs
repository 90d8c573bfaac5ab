//! The second opinion on grounding: a claim the lexical check passed only
//! narrowly is put to a model (the escalation target, when one is bound and
//! ready: the stronger model) with its passage, as a yes-or-no question:
//! does the passage state it? A "no" overrules the pass; no answer, or a
//! failed call, leaves the lexical judgement standing and says so. What the
//! calls cost goes into the trace's Verification stage and the run's usage.
//!
//! Before it, a statement the check refused because its words differ from
//! the passage's may still be said there in other words: the check offers
//! the spans that keep its facts, and [`rephrasings`] weighs them by the
//! embedder's similarity in meaning.

use super::grounding::{Passage, Verdict};
use super::{estimate_cost, Usage};
use crate::embed::{cosine, Embedder};
use crate::providers::client::{Follow, Message};
use crate::providers::Resolved;
use crate::Lore;

/// What the second opinion did, for the trace.
pub struct Opinion {
    /// `not_needed`, `rejected` (a "no"), `confirmed` (a "yes", no "no"),
    /// `unclear` (neither) or `unavailable` (every call failed).
    pub decision: &'static str,
    pub reason: String,
    /// `None` when no model was asked.
    pub cost_usd: Option<f64>,
}

/// Asks `judge` about each claim of `verdict` that passed by less than
/// `margin`, and settles the verdict on the answers.
pub async fn second_opinion(
    lore: &Lore,
    judge: &Resolved,
    verdict: &mut Verdict,
    passages: &[Passage],
    margin: f32,
    usage: &mut Usage,
) -> Opinion {
    let narrow = verdict.narrow_passes(margin);
    if narrow.is_empty() {
        return Opinion {
            decision: "not_needed",
            reason: format!("every statement passed the grounding check by {margin:.2} or more"),
            cost_usd: None,
        };
    }
    let model = &judge.target.model;
    let (mut cost, mut confirmed, mut rejected, mut unclear, mut failed) = (0.0, 0, 0, 0, 0);
    let mut lines = Vec::new();
    for i in &narrow {
        let judged = &verdict.judged[*i];
        let Some(passage) = judged.passage.and_then(|n| passages.get(n - 1)) else { continue };
        let messages = question(&passage.full_text(), &judged.statement);
        let reply =
            crate::providers::chat(lore, &judge.endpoint, model, &messages, 4, 0.0, Follow::default()).await;
        let judged = &mut verdict.judged[*i];
        match reply {
            Ok(completion) => {
                let spent = estimate_cost(&completion, judge);
                cost += spent;
                usage.add(&completion, spent);
                match yes_or_no(&completion.text) {
                    Some(true) => {
                        confirmed += 1;
                        judged.notes.push(format!("{model} confirms it"));
                    }
                    Some(false) => {
                        rejected += 1;
                        judged.overrule(format!("{model} finds the passage does not state it"));
                    }
                    None => {
                        unclear += 1;
                        judged.notes.push(format!("{model} gave no yes or no; the lexical judgement stands"));
                    }
                }
            }
            Err(err) => {
                failed += 1;
                tracing::warn!(error = %err, model = %model, "the second opinion's call failed");
                judged.notes.push(format!("{model} did not answer; the lexical judgement stands"));
            }
        }
        lines.push(judged.explain());
    }
    verdict.settle();
    let decision = if rejected > 0 {
        "rejected"
    } else if confirmed > 0 {
        "confirmed"
    } else if failed == narrow.len() {
        "unavailable"
    } else {
        "unclear"
    };
    let mut reason = format!(
        "{model} judged {} narrowly passed statements: {confirmed} confirmed, {rejected} rejected, {unclear} unclear, {failed} unanswered",
        narrow.len()
    );
    for line in lines {
        reason.push('\n');
        reason.push_str(&line);
    }
    Opinion { decision, reason, cost_usd: Some(cost) }
}

/// The yes-or-no question about one claim.
fn question(passage: &str, claim: &str) -> Vec<Message> {
    vec![
        Message::system(
            "You check whether a passage states a claim. Reply with one word: yes or no. Answer no when \
             the claim's numbers, names or negations differ from the passage's.",
        ),
        Message::user(format!(
            "Passage:\n{}\n\nClaim: {}\n\nDoes the passage state the claim? Reply yes or no.",
            passage.trim(),
            claim.trim()
        )),
    ]
}

/// The reply's verdict: its first word, "yes" or "no" (`None`: neither).
pub fn yes_or_no(reply: &str) -> Option<bool> {
    let first = reply.split(|c: char| !c.is_alphabetic()).find(|w| !w.is_empty())?.to_lowercase();
    match first.as_str() {
        "yes" | "true" | "supported" => Some(true),
        "no" | "false" | "unsupported" => Some(false),
        _ => None,
    }
}

/// Weighs the rephrasings the check offered (statements whose words failed
/// it, with spans that keep their facts, negation and named subject) by how
/// similar in meaning `embedder` finds each statement and its spans, and
/// settles the verdict: a span at `min_similarity` or above supports its
/// statement. `min_similarity` of 0, or nothing offered, changes nothing.
/// A failed embedding leaves the check's verdict as it was: it is logged,
/// and the verdict names no similarity it did not compute.
pub async fn rephrasings(embedder: &dyn Embedder, verdict: &mut Verdict, min_similarity: f32) {
    let offered = verdict.rephrasings();
    if offered.is_empty() || min_similarity <= 0.0 {
        return;
    }
    // One batch: each statement, then its spans.
    let texts: Vec<String> = offered
        .iter()
        .flat_map(|(_, statement, quotes)| std::iter::once(statement).chain(quotes))
        .cloned()
        .collect();
    let vectors = match embedder.embed(&texts).await {
        Ok(vectors) if vectors.len() == texts.len() => vectors,
        Ok(_) => {
            tracing::warn!("the embedder returned too few vectors to weigh rephrasings");
            return;
        }
        Err(err) => {
            tracing::warn!(error = %err, "rephrasings were not weighed: the embedding failed");
            return;
        }
    };
    let mut at = 0;
    let mut similarities = Vec::new();
    for (i, _, quotes) in &offered {
        let statement = &vectors[at];
        let scores = vectors[at + 1..=at + quotes.len()].iter().map(|span| cosine(statement, span)).collect();
        similarities.push((*i, scores));
        at += 1 + quotes.len();
    }
    verdict.weigh_rephrasings(&similarities, min_similarity);
}
