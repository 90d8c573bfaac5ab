//! `engine::readiness`: the indexing concern, which keeps answers waiting only for the first index.

use chrono::{TimeZone, Utc};
use engine::chunk::ChunkingParams;
use engine::fingerprint;
use engine::readiness::{indexing, Status};
use engine::sources::{connector::AnyConnector, Source, SourceKind, SourceStatus, Volatility};

const MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

fn source(last_synced: bool, chunks: u32) -> Source {
    let at = Utc.with_ymd_and_hms(2026, 11, 20, 9, 30, 0).single().unwrap();
    Source {
        id: "s1".into(),
        name: "Docs".into(),
        kind: SourceKind::parse("website").unwrap(),
        enabled: true,
        status: if last_synced { SourceStatus::Ready } else { SourceStatus::Indexing },
        config: engine::sources::kinds::website::Website
            .parse(Some(serde_json::json!({"start_url": "https://docs.example.com/"})))
            .unwrap(),
        volatility: Volatility::Medium,
        document_count: chunks / 4,
        chunk_count: chunks,
        last_error: None,
        created_at: at,
        updated_at: at,
        last_synced_at: last_synced.then_some(at),
        next_sync_at: None,
        audience: engine::sources::Audience::Everyone,
        sync_state: None,
    }
}

fn stamp() -> fingerprint::Fingerprint {
    fingerprint::Fingerprint {
        embedding_model: MODEL.into(),
        dimensions: 384,
        chunking: ChunkingParams::default(),
    }
}

#[test]
fn only_the_first_index_keeps_answers_waiting() {
    let first = indexing(&[source(false, 0)], 1, None, MODEL);
    assert_eq!(first.status, Status::Pending, "{}", first.detail);

    // A scheduled re-sync, or a second source's first run, of a corpus
    // already indexed: it keeps answering.
    let resync = indexing(&[source(true, 120)], 1, Some(&stamp()), MODEL);
    assert_eq!(resync.status, Status::Ok, "{}", resync.detail);
    assert!(resync.detail.contains("1 indexing run(s) in progress"), "{}", resync.detail);
    let second = indexing(&[source(true, 120), source(false, 0)], 1, Some(&stamp()), MODEL);
    assert_eq!(second.status, Status::Ok, "{}", second.detail);

    let idle = indexing(&[source(true, 120)], 0, Some(&stamp()), MODEL);
    assert_eq!(idle.status, Status::Ok);
    assert_eq!(indexing(&[source(false, 0)], 0, None, MODEL).status, Status::Missing);

    // A reindex for another embedding model still fails closed while it runs.
    let other = fingerprint::Fingerprint { embedding_model: "BAAI/bge-small-en-v1.5".into(), ..stamp() };
    assert_eq!(indexing(&[source(true, 120)], 1, Some(&other), MODEL).status, Status::Failing);
}
