//! `lore_server::http::layers`: the request log's levels and the cross-origin guard's judgement.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue};
use axum::routing::get;
use axum::Router;
use lore_server::http::layers::{is_same_origin, observe};
use tower::ServiceExt;

/// A log destination the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The request log at INFO and at DEBUG, with a subscriber set for this
/// thread only (the test's runtime is single-threaded, so the requests
/// run here), not the global one other tests may set.
#[tokio::test]
async fn probes_are_logged_at_debug_and_other_requests_at_info() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let app: Router = observe(
        Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(|| async { "ready" }))
            .route("/retrieve", get(|| async { "results" })),
    );
    for path in ["/healthz", "/readyz", "/retrieve", "/healthz?verbose=1"] {
        let response =
            app.clone().oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let served: Vec<&str> = log.lines().filter(|line| line.contains("served")).collect();
    assert_eq!(served.len(), 4, "{log}");
    for line in served {
        let level = if line.contains("path=/retrieve") { " INFO " } else { "DEBUG " };
        assert!(line.contains(level), "{line}");
    }
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn same_origin_is_judged_from_fetch_metadata_then_origin() {
    assert!(is_same_origin(&headers(&[("sec-fetch-site", "same-origin")])));
    assert!(is_same_origin(&headers(&[("sec-fetch-site", "none")])));
    assert!(!is_same_origin(&headers(&[
        ("sec-fetch-site", "cross-site"),
        ("origin", "http://127.0.0.1:3000"),
        ("host", "127.0.0.1:3000")
    ])));
    assert!(!is_same_origin(&headers(&[("sec-fetch-site", "same-site")])));
    assert!(is_same_origin(&headers(&[("origin", "http://127.0.0.1:3000"), ("host", "127.0.0.1:3000")])));
    assert!(!is_same_origin(&headers(&[("origin", "http://evil.example"), ("host", "127.0.0.1:3000")])));
    assert!(!is_same_origin(&headers(&[("origin", "null"), ("host", "127.0.0.1:3000")])));
    assert!(is_same_origin(&headers(&[("host", "127.0.0.1:3000")])));
}
