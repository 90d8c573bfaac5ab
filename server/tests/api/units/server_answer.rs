//! `lore_server::http::answer`: the widget's stage names, when to stream, and the answer's tokens.

use axum::http::{header, HeaderMap, HeaderValue};
use lore_server::http::answer::{pieces, wants_stream};

#[test]
fn the_widget_names_only_stages_the_engine_has() {
    let script = include_str!("../../../assets/widget.js");
    let block = script.split("var STATUS = {").nth(1).and_then(|rest| rest.split("};").next()).unwrap();
    let names: Vec<&str> =
        block.lines().filter_map(|line| line.trim().split_once(':')).map(|(name, _)| name).collect();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        assert!(
            engine::trace::StageName::parse(name).is_some(),
            "widget.js names a stage `{name}` the engine does not have"
        );
    }
}

#[test]
fn the_body_decides_streaming_else_accept_must_prefer_events() {
    let accept = |value: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        headers
    };
    assert!(wants_stream(&accept("text/event-stream"), None));
    assert!(wants_stream(&HeaderMap::new(), Some(true)));
    assert!(!wants_stream(&HeaderMap::new(), None));
    // An explicit `stream: false` wins over the header.
    assert!(!wants_stream(&accept("text/event-stream"), Some(false)));
    // A client that takes either gets JSON; one that refuses events too.
    assert!(!wants_stream(&accept("application/json, text/event-stream"), None));
    assert!(!wants_stream(&accept("text/event-stream;q=0"), None));
    assert!(!wants_stream(&accept("text/event-stream; Q=0"), None));
    assert!(wants_stream(&accept("application/json;q=0.5, Text/Event-Stream"), None));
}

#[test]
fn pieces_join_back_into_the_text() {
    let text = "Stop Lore,  copy the snapshot [1].\nThen start it.";
    let parts = pieces(text);
    assert_eq!(parts.concat(), text);
    assert_eq!(parts[0], "Stop");
    assert_eq!(parts[1], " Lore,");
    assert!(parts.len() > 5);
    assert!(pieces("").is_empty());
}
