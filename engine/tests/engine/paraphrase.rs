//! Paraphrase support on the real embedding model: statements the grounding
//! check refused for their words, weighed by MiniLM's similarity in meaning
//! to the spans that keep their facts. The cases (`grounding/tests/fixtures/paraphrases.json`)
//! are SmolLM2's right replies that `lore bench quality` found lost, and
//! wrong statements built on the same passages. MiniLM finds some wrong
//! statements as close as right ones, so the default leaves it off; an
//! admin turns it on with `answer.paraphrase_min_similarity`.

use engine::answer::grounding::{self, Passage};
use engine::answer::verify;

use crate::support;

/// The similarity the fixture's `served` was measured at.
const MIN_SIMILARITY: f32 = 0.6;

#[tokio::test]
async fn a_paraphrase_keeping_the_facts_is_served_and_a_changed_fact_is_not() {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../../../grounding/tests/fixtures/paraphrases.json")).unwrap();
    let passages: Vec<Passage> = fixture["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| Passage::new(p["context"].as_str().unwrap(), p["text"].as_str().unwrap()))
        .collect();
    let (lore, _dir) = support::open().await;
    let embedder = lore.embedder().await.unwrap();
    let settings = &lore.settings.answer;
    assert_eq!(settings.paraphrase_min_similarity, 0.0, "off by default");
    let mut wrong = Vec::new();
    let mut served_right = 0;
    let passages = &passages;
    for case in fixture["cases"].as_array().unwrap() {
        let (question, answer) = (case["question"].as_str().unwrap(), case["answer"].as_str().unwrap());
        let judged = |min_similarity: f32| {
            let embedder = embedder.clone();
            async move {
                let mut verdict =
                    grounding::check(question, answer, passages, settings.grounding_min_support);
                verify::rephrasings(embedder.as_ref(), &mut verdict, min_similarity).await;
                verdict
            }
        };
        // Off, the words test decides alone.
        assert!(!judged(settings.paraphrase_min_similarity).await.grounded, "{answer}");
        let verdict = judged(MIN_SIMILARITY).await;
        if let Some(served) = case["served"].as_bool() {
            if verdict.grounded != served {
                wrong.push(format!("{}: {answer}\n{}", case["why"], verdict.detail));
            }
        }
        if verdict.grounded && case["served"].as_bool() == Some(true) {
            served_right += 1;
            let judged = &verdict.judged[0];
            let support = judged.support.as_ref().unwrap();
            let passage = &passages[judged.passage.unwrap() - 1].text;
            assert!(passage.contains(&support.quote), "a served statement quotes its passage verbatim");
            assert!(verdict.detail.contains("said in other words"), "{}", verdict.detail);
        }
    }
    assert!(wrong.is_empty(), "misjudged at similarity {MIN_SIMILARITY}:\n{}", wrong.join("\n\n"));
    assert!(served_right >= 3, "the right paraphrases are served");
}
