//! Content gaps grouped by meaning: refused questions that ask the same
//! thing ("How do I export to CSV?", "how to export data as csv") are one
//! gap on the Dashboard, with their summed count and their wordings as
//! examples. Questions are embedded by the embedder that serves answers;
//! each joins the first group (most asked first) whose leading question is
//! at least [`SAME_GAP`] similar, or starts its own. A question's vector is
//! kept ([`crate::embed::kept`]) while the same embedder serves, so a Dashboard load
//! embeds only the questions refused since the last one. When nothing can
//! embed (the model's files are missing), each question is its own group:
//! the Dashboard still shows every gap.

use crate::embed::cosine;
use crate::metrics::QueryCount;
use crate::Lore;

/// Cosine similarity at which two refused questions count as one gap. The
/// local model puts paraphrases of a question above 0.8 and different
/// questions on one topic ("export to CSV", "import from CSV") near 0.6.
pub const SAME_GAP: f32 = 0.75;

/// At most this many refused questions are grouped (the most asked).
pub const GROUPED_AT_MOST: usize = 200;

/// One content gap: the questions that mean the same thing.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GapGroup {
    /// The group's most asked question.
    pub label: String,
    /// How often any of its questions was refused.
    pub count: i64,
    /// Its questions with their counts, most asked first (the label's too).
    pub questions: Vec<QueryCount>,
}

/// Groups `gaps` (most asked first) by meaning, most asked group first.
pub async fn group(lore: &Lore, gaps: &[QueryCount]) -> Vec<GapGroup> {
    let gaps = &gaps[..gaps.len().min(GROUPED_AT_MOST)];
    let vectors = match embed(lore, gaps).await {
        Ok(vectors) => Some(vectors),
        Err(err) => {
            tracing::warn!(error = %err, "content gaps are listed ungrouped: they could not be embedded");
            None
        }
    };
    cluster(gaps, vectors.as_deref(), SAME_GAP)
}

async fn embed(lore: &Lore, gaps: &[QueryCount]) -> crate::Result<Vec<Vec<f32>>> {
    if gaps.is_empty() {
        return Ok(Vec::new());
    }
    let embedder = lore.embedder().await?;
    let questions: Vec<String> = gaps.iter().map(|g| g.query.clone()).collect();
    Ok(lore.answering().gap_vectors.vectors(&embedder, &questions, false).await?)
}

/// Greedy grouping: each question, most asked first, joins the first group
/// whose leader is `threshold` similar to it.
pub fn cluster(gaps: &[QueryCount], vectors: Option<&[Vec<f32>]>, threshold: f32) -> Vec<GapGroup> {
    let mut groups: Vec<(usize, GapGroup)> = Vec::new();
    for (i, gap) in gaps.iter().enumerate() {
        let joins = vectors.and_then(|vectors| {
            groups.iter().position(|(leader, _)| cosine(&vectors[*leader], &vectors[i]) >= threshold)
        });
        match joins {
            Some(at) => {
                let group = &mut groups[at].1;
                group.count += gap.count;
                group.questions.push(gap.clone());
            }
            None => groups.push((
                i,
                GapGroup { label: gap.query.clone(), count: gap.count, questions: vec![gap.clone()] },
            )),
        }
    }
    let mut groups: Vec<GapGroup> = groups.into_iter().map(|(_, group)| group).collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.label.cmp(&b.label)));
    groups
}
