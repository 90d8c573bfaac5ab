//! `engine::answer::cache`: the answer cache's lookups, its writer, pruning and citations.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use chrono::Utc;
use engine::answer::cache::{citations_current, AnswerCache, CitedChunk, Entry, COMPACT_EVERY, TABLE};
use engine::index::lance::Location;

fn entry(question: &str, version: i32, vector: Vec<f32>) -> Entry {
    Entry {
        id: uuid::Uuid::new_v4().to_string(),
        question: question.into(),
        profile_version: version,
        scope: "*".into(),
        created_at: Utc::now(),
        grounded: true,
        payload: serde_json::json!({"answer": "stop, copy, start"}),
        cited: vec![CitedChunk { chunk_id: "d:0".into(), content_hash: "h1".into() }],
        vector,
    }
}

#[tokio::test]
async fn exact_and_nearest_lookups_stay_within_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let uri = Location::new(dir.path().to_string_lossy());
    let cache = AnswerCache::open(&uri, 3).await.unwrap();
    cache.insert(&entry("how do i restore", 1, vec![1.0, 0.0, 0.0])).await.unwrap();
    cache.insert(&entry("what's new", 1, vec![0.0, 1.0, 0.0])).await.unwrap();

    assert!(!cache.knows("how do i restore", "admin"), "an audience that has not searched knows nothing");
    cache.searched_with("admin", "*");
    assert!(cache.knows("how do i restore", "admin") && !cache.knows("how do i restart", "admin"));
    cache.searched_with("everyone", "public-sources");
    assert!(!cache.knows("how do i restore", "everyone"), "another scope's entry does not count");
    let hit = cache.exact("how do i restore", 1, "*").unwrap();
    assert_eq!(hit.payload["answer"], "stop, copy, start");
    assert_eq!(hit.cited[0].content_hash, "h1");
    assert!(cache.exact("how do i restore", 2, "*").is_none());

    let near = cache.nearest(&[0.9, 0.1, 0.0], 1, "*", 1);
    assert_eq!(near[0].0.question, "how do i restore");
    assert!(near[0].1 > 0.9 && near[0].1 <= 1.0, "{}", near[0].1);
    assert!(cache.nearest(&[0.9, 0.1, 0.0], 2, "*", 1).is_empty());
    // Another visible scope sees none of them, exactly or nearly.
    assert!(cache.exact("how do i restore", 1, "a-narrower-scope").is_none());
    assert!(cache.nearest(&[0.9, 0.1, 0.0], 1, "a-narrower-scope", 1).is_empty());

    cache.delete(&hit.id).await.unwrap();
    assert_eq!(cache.count().await.unwrap(), 1);
    assert!(cache.exact("how do i restore", 1, "*").is_none());

    // Lookups read memory; a reopened cache reloads it from the table
    // (`count` waited for the writer).
    let reopened = AnswerCache::open(&uri, 3).await.unwrap();
    assert!(reopened.exact("how do i restore", 1, "*").is_none());
    let kept = reopened.exact("what's new", 1, "*").unwrap();
    assert_eq!(kept.vector, vec![0.0, 1.0, 0.0]);
    assert_eq!(reopened.nearest(&[0.0, 1.0, 0.0], 1, "*", 5).len(), 1);

    // Another embedding size: the table starts over.
    let resized = AnswerCache::open(&uri, 4).await.unwrap();
    assert_eq!(resized.count().await.unwrap(), 0);
}

#[tokio::test]
async fn the_writer_persists_every_write_and_compacts_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let uri = Location::new(dir.path().to_string_lossy());
    let cache = AnswerCache::open(&uri, 3).await.unwrap();
    let writes = COMPACT_EVERY + 10;
    for i in 0..writes {
        cache.insert(&entry(&format!("question {i}"), 1, vec![1.0, i as f32, 0.0])).await.unwrap();
    }
    // Memory serves at once; the table has them all once flushed.
    assert!(cache.exact(&format!("question {}", writes - 1), 1, "*").is_some());
    assert_eq!(cache.count().await.unwrap(), writes);
    let fragments = cache.fragments().await.unwrap();
    assert!(fragments <= 11, "{fragments} fragments after {writes} one-row appends");

    let reopened = AnswerCache::open(&uri, 3).await.unwrap();
    assert_eq!(reopened.entries().len(), writes);
}

#[tokio::test]
async fn pruning_drops_what_can_never_serve_again() {
    let dir = tempfile::tempdir().unwrap();
    let uri = Location::new(dir.path().to_string_lossy());
    let cache = AnswerCache::open(&uri, 3).await.unwrap();
    let now = Utc::now();
    let minutes_ago = |minutes: i64| now - chrono::Duration::minutes(minutes);
    let made = |question: &str, version: i32, minutes: i64| Entry {
        created_at: minutes_ago(minutes),
        ..entry(question, version, vec![1.0, 0.0, 0.0])
    };
    for entry in [
        made("current", 2, 1),
        made("a newer version's", 3, 2),
        made("another version", 1, 15),
        made("before the restore", 2, 20),
        made("too old", 2, 90),
    ] {
        cache.insert(&entry).await.unwrap();
    }

    // Version 2 was made active 10 minutes ago.
    assert_eq!(cache.prune(minutes_ago(10)).await.unwrap(), 3);
    let mut left: Vec<String> = cache.entries().into_iter().map(|e| e.question).collect();
    left.sort();
    assert_eq!(left, ["a newer version's", "current"]);
    assert_eq!(cache.count().await.unwrap(), 2, "the table lost them too");
    assert_eq!(cache.prune(minutes_ago(10)).await.unwrap(), 0);

    // A table of an older layout (without a column) starts over.
    drop(cache);
    let db = lancedb::connect(&uri.uri).execute().await.unwrap();
    db.drop_table(TABLE, &[]).await.unwrap();
    let older = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
    db.create_empty_table(TABLE, older).execute().await.unwrap();
    let reopened = AnswerCache::open(&uri, 3).await.unwrap();
    reopened.insert(&made("current", 2, 1)).await.unwrap();
    assert_eq!(reopened.count().await.unwrap(), 1);
}

#[test]
fn citations_are_current_only_with_the_same_hashes() {
    let cited = vec![CitedChunk { chunk_id: "d:0".into(), content_hash: "h1".into() }];
    let same = HashMap::from([("d:0".to_owned(), "h1".to_owned())]);
    let changed = HashMap::from([("d:0".to_owned(), "h2".to_owned())]);
    assert!(citations_current(&cited, &same));
    assert!(!citations_current(&cited, &changed));
    assert!(!citations_current(&cited, &HashMap::new()));
}
