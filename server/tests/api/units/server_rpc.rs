//! Tests of `lore_server::http::mcp::rpc`, JSON-RPC as the tool server speaks it.

use lore_server::http::mcp::rpc::{
    parse, value, CallResult, Code, Incoming, Notification, Reply, RpcError, SUBSCRIPTION_ID,
};
use lore_toolserver::hub::{Notice, Pushed};
use serde_json::{json, Map, Value};

#[test]
fn replies_and_errors_are_json_rpc_envelopes() {
    assert_eq!(
        Reply::result(json!(7), json!({"tools": []})).to_value(),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}})
    );
    let refused = RpcError::new(Code::PermissionDenied, "no").with_data(json!({"code": "permission_denied"}));
    assert_eq!(
        Reply::error(json!("a"), refused).to_value(),
        json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32001, "message": "no", "data": {"code": "permission_denied"}}})
    );
    assert_eq!(
        Reply::error(Value::Null, RpcError::new(Code::ParseError, "bad")).to_value(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}})
    );
}

#[test]
fn a_body_is_read_as_one_request_a_notification_or_a_response() {
    let call = parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
    assert_eq!(call, Incoming::Call { id: Some(json!(1)), method: "ping".into(), params: Map::new() });
    let note = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"a":1}}"#).unwrap();
    let Incoming::Call { id: None, params, .. } = note else { panic!("a notification") };
    assert_eq!(params.get("a"), Some(&json!(1)));
    assert_eq!(parse(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap(), Incoming::Response);
    let null_id = parse(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap();
    assert!(matches!(null_id, Incoming::Call { id: Some(Value::Null), .. }), "{null_id:?}");

    let code = |body: &[u8]| parse(body).unwrap_err().error.code;
    assert_eq!(code(b"{"), Code::ParseError);
    assert_eq!(code(b"[]"), Code::InvalidRequest);
    assert_eq!(code(b"3"), Code::InvalidRequest);
    assert_eq!(code(br#"{"id":1}"#), Code::InvalidRequest);
    let wrong = parse(br#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#).unwrap_err();
    assert_eq!((wrong.id, wrong.error.code), (json!(9), Code::InvalidRequest));
    assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#), Code::InvalidParams);
}

#[test]
fn pushed_notices_are_notifications_tagged_on_a_listen_stream() {
    let session = Pushed { notice: Notice::ToolsListChanged, subscription: None };
    assert_eq!(
        Notification::pushed(session).to_value(),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    let listen = Pushed { notice: Notice::ResourceUpdated("u".into()), subscription: Some(json!(4)) };
    assert_eq!(
        Notification::pushed(listen).to_value(),
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"_meta": {SUBSCRIPTION_ID: 4}, "uri": "u"}})
    );
}

#[test]
fn tool_results_carry_their_text_and_structured_content() {
    let result = value(&CallResult::new(json!({"answer": "yes"}), false));
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "{\"answer\":\"yes\"}"}], "structuredContent": {"answer": "yes"}, "isError": false})
    );
}
