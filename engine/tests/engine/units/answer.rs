//! `engine::answer`: normalising questions, the prompts, what may be served and for how long.

use engine::answer::grounding;
use engine::answer::{
    cited_max_age, normalise, prompt, quote_prompt, scaled_max_age, servable, MAX_QUESTION_CHARS,
};
use engine::retrieve::Retrieved;

#[test]
fn questions_are_normalised_for_the_cache_key() {
    let n = normalise("  How do I   restore a Snapshot?? ").unwrap();
    assert_eq!(n.text, "How do I restore a Snapshot??");
    assert_eq!(n.key, "how do i restore a snapshot");
    assert!(normalise(" \n ").is_err());
    assert!(normalise(&"x".repeat(MAX_QUESTION_CHARS + 1)).is_err());
}

#[test]
fn a_quote_first_prompt_shows_each_passage_s_sentences_closest_to_the_question() {
    let snapshot = engine::profile::default_snapshot("documentation_assistant", Default::default()).unwrap();
    let chunk = engine::index::ChunkRow {
        id: "d:0".into(),
        source_id: "s".into(),
        view: None,
        document_id: "d".into(),
        title: "Limits".into(),
        url: None,
        heading: Some("Pages".into()),
        position: 0,
        text: "SQLite limits many things. The default page size is 4096 bytes. Cats are not related to \
               databases at all."
            .into(),
        content_hash: String::new(),
        vector: Vec::new(),
    };
    let passages = [Retrieved {
        chunk,
        score: 1.0,
        vector_score: 1.0,
        text_score: None,
        vector_rank: None,
        text_rank: None,
        rerank_score: None,
    }];
    let question = "What is the default page size?";
    let whole = prompt(&snapshot, question, &passages);
    assert!(whole[1].content.contains("Cats are not related"), "{}", whole[1].content);
    let quoting = quote_prompt(&snapshot, question, &passages);
    let user = &quoting[1].content;
    assert!(user.contains("[1] Limits — Pages\n… The default page size is 4096 bytes. …\n"), "{user}");
    assert!(!user.contains("Cats"), "{user}");
    assert!(user.ends_with("Question: What is the default page size?"), "{user}");
    assert!(quoting[0].content.contains("copying, word for word"), "{}", quoting[0].content);
    // A passage saying none of the question's words shows as "…".
    let nothing = quote_prompt(&snapshot, "Where do penguins live?", &passages);
    assert!(nothing[1].content.contains("[1] Limits — Pages\n…\n"), "{}", nothing[1].content);
}

#[test]
fn volatility_scales_the_maximum_age() {
    use engine::sources::Volatility::*;
    assert_eq!(scaled_max_age(3600, High), 900);
    assert_eq!(scaled_max_age(3600, Medium), 3600);
    assert_eq!(scaled_max_age(3600, Low), 25_200);
    assert_eq!(scaled_max_age(3600, Static), 108_000);
}

#[test]
fn a_refusal_that_shares_the_passages_words_is_not_served_as_an_answer() {
    // A profile's refusal sentence without a negation, which the
    // grounding check alone cannot tell from an answer.
    let refusal = "Find this in the documentation of the admin console.";
    let passages = vec![grounding::Passage::plain(
        "Find the backup settings in the documentation of the admin console.",
    )];
    let declined = grounding::check("How do I rotate keys?", refusal, &passages, 0.5);
    assert!(declined.grounded, "the grounding check alone passes it: {}", declined.reason);
    assert!(!servable(refusal, &declined, refusal));
    assert!(!servable(&format!("Sorry. {}", refusal.to_uppercase()), &declined, refusal));

    let answer = "The backup settings are in the admin console [1].";
    let grounded = grounding::check("Where are the backup settings?", answer, &passages, 0.5);
    assert!(grounded.grounded && servable(answer, &grounded, refusal), "{}", grounded.reason);
}

#[test]
fn an_answer_lives_as_long_as_its_most_changeable_cited_source_allows() {
    use engine::sources::Volatility::*;
    assert_eq!(cited_max_age(3600, [Static, Static]), 108_000, "static pages lengthen it");
    assert_eq!(cited_max_age(3600, [Low]), 25_200);
    assert_eq!(cited_max_age(3600, [Static, High, Low]), 900, "one volatile page shortens it");
    assert_eq!(cited_max_age(3600, []), 3600, "no known source: the gate's own age");
}
