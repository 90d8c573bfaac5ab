//! Tests of `lore_server::http::mcp`, the tool server's transport.

use axum::http::{header, HeaderMap, HeaderValue};
use base64::Engine as _;
use lore_server::http::mcp::{accepts, decode_header, page, PAGE};
use serde_json::{json, Map, Value};

fn with_accept(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
    headers
}

#[test]
fn accept_says_json_event_stream_or_neither() {
    assert_eq!(accepts(&HeaderMap::new()), (true, true), "no Accept takes anything");
    assert_eq!(accepts(&with_accept("application/json, text/event-stream")), (true, true));
    assert_eq!(accepts(&with_accept("text/event-stream")), (false, true));
    assert_eq!(accepts(&with_accept("application/json;q=0.9")), (true, false));
    assert_eq!(accepts(&with_accept("*/*")), (true, true));
    assert_eq!(accepts(&with_accept("text/html")), (false, false));
}

#[test]
fn header_values_decode_from_the_base64_sentinel() {
    assert_eq!(decode_header("tools/call").as_deref(), Some("tools/call"));
    let encoded = format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode("café"));
    assert_eq!(decode_header(&encoded).as_deref(), Some("café"));
    assert_eq!(decode_header("=?base64?%%%?="), None);
}

#[test]
fn lists_page_by_opaque_cursors() {
    let items: Vec<Value> = (0..450).map(|i| json!(i)).collect();
    let Ok(first) = page(&Map::new(), "tools", items.clone()) else { panic!("the first page") };
    assert_eq!(first["tools"].as_array().unwrap().len(), PAGE);
    let mut params = Map::new();
    params.insert("cursor".into(), first["nextCursor"].clone());
    let Ok(second) = page(&params, "tools", items.clone()) else { panic!("the second page") };
    assert_eq!(second["tools"][0], json!(200));
    params.insert("cursor".into(), second["nextCursor"].clone());
    let Ok(last) = page(&params, "tools", items.clone()) else { panic!("the last page") };
    assert_eq!(last["tools"].as_array().unwrap().len(), 50);
    assert!(last.get("nextCursor").is_none());
    params.insert("cursor".into(), json!("not-a-cursor"));
    assert!(page(&params, "tools", items).is_err());
}
