use crate::helpers::spawn_app;

#[tokio::test]
async fn liveness_and_readiness_answer() {
    let app = spawn_app().await;
    let live = app.get("/healthz").await;
    assert_eq!(live.status(), 200);
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["status"], "ready");
}

#[tokio::test]
async fn readiness_fails_when_the_database_is_gone() {
    let app = spawn_app().await;
    app.lore.db.clone().close().await.unwrap();
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_ready");
}
