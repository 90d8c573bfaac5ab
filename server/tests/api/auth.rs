use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::connect_info::MockConnectInfo;
use chrono::{Duration, Utc};
use tower::ServiceExt;

use crate::helpers::{spawn_app, spawn_app_with, Options, ADMIN_EMAIL};

async fn error_code(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    (status, body["error"]["code"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn admin_endpoints_need_a_session() {
    let app = spawn_app().await;
    let response = app.get("/admin/setup-state/").await;
    assert_eq!(response.status(), 401);
    let body: serde_json::Value = response.json().await.unwrap();
    insta::assert_json_snapshot!(body, @r#"
    {
      "error": {
        "code": "unauthenticated",
        "message": "Sign in to use the console."
      }
    }
    "#);
}

#[tokio::test]
async fn console_pages_send_the_signed_out_to_sign_in() {
    let app = spawn_app().await;
    let response = app.get("/sources").await;
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/signin?next=%2Fsources");
    let signin = app.get("/signin").await;
    assert_eq!(signin.status(), 200);
    assert!(signin.text().await.unwrap().contains("one-time sign-in link"));
}

#[tokio::test]
async fn a_bootstrap_link_works_once() {
    let app = spawn_app().await;
    let token = engine::auth::bootstrap::issue(&app.lore, Utc::now()).await.unwrap();

    let first = app.get(&format!("/auth/bootstrap?token={token}")).await;
    assert_eq!(first.status(), 303);
    assert_eq!(first.headers()["location"], "/");
    let cookie = first.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);

    let again = app.get(&format!("/auth/bootstrap?token={token}")).await;
    assert_eq!(error_code(again).await, (403, "bootstrap_link_invalid".into()));
}

#[tokio::test]
async fn an_expired_bootstrap_link_fails() {
    let app = spawn_app().await;
    let token = engine::auth::bootstrap::issue(&app.lore, Utc::now() - Duration::minutes(16)).await.unwrap();
    let response = app.get(&format!("/auth/bootstrap?token={token}")).await;
    assert_eq!(error_code(response).await, (403, "bootstrap_link_invalid".into()));
    assert_eq!(app.get("/admin/setup-state/").await.status(), 401);
}

#[tokio::test]
async fn a_new_bootstrap_link_replaces_an_unused_one() {
    let app = spawn_app().await;
    let old = engine::auth::bootstrap::issue(&app.lore, Utc::now()).await.unwrap();
    let _new = engine::auth::bootstrap::issue(&app.lore, Utc::now()).await.unwrap();
    let response = app.get(&format!("/auth/bootstrap?token={old}")).await;
    assert_eq!(error_code(response).await, (403, "bootstrap_link_invalid".into()));
}

/// Replicas on two machines each print their link at start: the second
/// start leaves the first machine's link valid, and replaces only its own.
#[tokio::test]
async fn a_new_bootstrap_link_leaves_another_machines_link_valid() {
    use engine::auth::bootstrap::issue_on;
    let app = spawn_app().await;
    let on_a = issue_on(&app.lore, Utc::now(), "replica-a").await.unwrap();
    let first_on_b = issue_on(&app.lore, Utc::now(), "replica-b").await.unwrap();
    let _second_on_b = issue_on(&app.lore, Utc::now(), "replica-b").await.unwrap();
    let replaced = app.get(&format!("/auth/bootstrap?token={first_on_b}")).await;
    assert_eq!(error_code(replaced).await, (403, "bootstrap_link_invalid".into()));
    let kept = app.get(&format!("/auth/bootstrap?token={on_a}")).await;
    assert_eq!(kept.status(), 303, "the link printed on replica A still signs in");
}

/// The request reaches the router in-process with a non-loopback peer address:
/// the test server itself listens on loopback only.
#[tokio::test]
async fn a_bootstrap_link_from_off_the_machine_fails() {
    let app = spawn_app().await;
    let token = engine::auth::bootstrap::issue(&app.lore, Utc::now()).await.unwrap();
    let remote = lore_server::serve::app(app.lore.clone())
        .layer(MockConnectInfo(SocketAddr::from(([10, 1, 2, 3], 40000))));
    let request = http::Request::get(format!("/auth/bootstrap?token={token}")).body(Body::empty()).unwrap();
    let response = remote.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 403);
    let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["code"], "bootstrap_not_loopback");

    // Through a proxy on this machine the real client may be anywhere.
    let proxied = app
        .client
        .get(app.url(&format!("/auth/bootstrap?token={token}")))
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(proxied).await, (403, "bootstrap_not_loopback".into()));

    // Refusals did not spend the link: from loopback it still works.
    assert_eq!(app.get(&format!("/auth/bootstrap?token={token}")).await.status(), 303);
}

#[tokio::test]
async fn an_admin_signs_in_through_the_identity_provider() {
    let app = spawn_app_with(Options { oidc: true, ..Options::default() }).await;
    assert_eq!(app.sign_in_with_oidc("ada").await, 200);
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
    // With an identity provider configured, the bootstrap link is off.
    let response = app.get("/auth/bootstrap?token=anything").await;
    assert_eq!(error_code(response).await, (404, "bootstrap_disabled".into()));
}

#[tokio::test]
async fn a_signed_in_non_admin_finds_the_admin_area_unavailable() {
    let app = spawn_app_with(Options { oidc: true, ..Options::default() }).await;
    // The console page itself answers 403 with a clear page.
    assert_eq!(app.sign_in_with_oidc("bob").await, 403);
    let page = app.get("/").await;
    assert_eq!(page.status(), 403);
    let html = page.text().await.unwrap();
    assert!(html.contains("admin_unavailable") && html.contains("bob@example.test"), "{html}");

    let response = app.get("/admin/setup-state/").await;
    assert_eq!(error_code(response).await, (403, "admin_unavailable".into()));
}

#[tokio::test]
async fn a_forged_callback_does_not_sign_in() {
    let app = spawn_app_with(Options { oidc: true, ..Options::default() }).await;
    let response = app.get("/auth/oidc/callback?code=made-up&state=made-up").await;
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/signin?error=sign_in_failed");
    assert_eq!(app.get("/admin/setup-state/").await.status(), 401);
}

#[tokio::test]
async fn after_sign_out_the_old_cookie_no_longer_works() {
    let app = spawn_app_with(Options { oidc: true, ..Options::default() }).await;
    app.sign_in_with_oidc("ada").await;
    let old_cookie = app.session_cookie().expect("signed in");

    let signed_out =
        app.client.post(app.url("/auth/signout")).header("origin", &app.base_url).send().await.unwrap();
    assert_eq!(signed_out.status(), 303);

    let replay = reqwest::Client::new()
        .get(app.url("/admin/setup-state/"))
        .header("cookie", format!("lore_session={old_cookie}"))
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 401);
}

#[tokio::test]
async fn a_cross_origin_mutation_is_refused() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;

    let forged = app
        .client
        .post(app.url("/auth/signout"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(forged).await, (403, "cross_origin_rejected".into()));
    let forged = app
        .client
        .post(app.url("/auth/signout"))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(forged).await, (403, "cross_origin_rejected".into()));

    // The session survived both attempts.
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
}

#[tokio::test]
async fn a_tampered_session_cookie_is_refused_and_cleared() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let cookie = app.session_cookie().unwrap();
    let tampered = format!("{}x", cookie);
    let response = reqwest::Client::new()
        .get(app.url("/admin/setup-state/"))
        .header("cookie", format!("lore_session={tampered}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.starts_with("lore_session=;") && set_cookie.contains("Max-Age=0"), "{set_cookie}");
}

#[tokio::test]
async fn members_of_an_admin_group_are_admins() {
    // Bob is not listed by email, but the provider puts him in group `staff`.
    let app =
        spawn_app_with(Options { oidc: true, admin_groups: vec!["staff".into()], ..Options::default() })
            .await;
    assert_eq!(app.sign_in_with_oidc("bob").await, 200);
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
}

#[tokio::test]
async fn a_listed_email_the_provider_does_not_call_verified_makes_no_admin() {
    // Cy's ID token has her email but no `email_verified` claim.
    let with_cy: fn(&mut engine::Settings) = |s| s.auth.admins.push("cy@example.test".into());
    let app = spawn_app_with(Options { oidc: true, configure: Some(with_cy), ..Options::default() }).await;
    assert_eq!(app.sign_in_with_oidc("cy").await, 403);
    let response = app.get("/admin/setup-state/").await;
    assert_eq!(error_code(response).await, (403, "admin_unavailable".into()));

    // For a provider that never sends the claim, the admin can accept that.
    let accepting: fn(&mut engine::Settings) = |s| {
        s.auth.admins.push("cy@example.test".into());
        s.auth.accept_unverified_email = true;
    };
    let app = spawn_app_with(Options { oidc: true, configure: Some(accepting), ..Options::default() }).await;
    assert_eq!(app.sign_in_with_oidc("cy").await, 200);
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
}

#[tokio::test]
async fn removing_an_admin_from_the_settings_ends_their_admin_access() {
    let mut app = spawn_app_with(Options { oidc: true, ..Options::default() }).await;
    assert_eq!(app.sign_in_with_oidc("ada").await, 200);
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);

    // The session lives on, but no longer as an admin's.
    app.restart_with(|s| s.auth.admins.clear()).await;
    let response = app.get("/admin/setup-state/").await;
    assert_eq!(error_code(response).await, (403, "admin_unavailable".into()));

    // Listed again: the same session works, without signing in again.
    app.restart_with(|s| s.auth.admins = vec![ADMIN_EMAIL.to_owned()]).await;
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
}

#[tokio::test]
async fn configuring_an_identity_provider_ends_the_bootstrap_admins_access() {
    let mut app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);

    app.restart_with(|s| {
        s.auth.oidc.issuer = Some("http://127.0.0.1:9".into());
        s.auth.oidc.client_id = Some("lore".into());
        s.auth.admins = vec![ADMIN_EMAIL.to_owned()];
    })
    .await;
    let response = app.get("/admin/setup-state/").await;
    assert_eq!(error_code(response).await, (403, "admin_unavailable".into()));
}

#[tokio::test]
async fn server_functions_refuse_cross_origin_calls() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let same = app.client.post(app.url("/api/viewer")).header("origin", &app.base_url).send().await.unwrap();
    assert_eq!(same.status(), 200);
    assert!(same.text().await.unwrap().contains("Bootstrap admin"));
    let forged =
        app.client.post(app.url("/api/viewer")).header("origin", "http://evil.example").send().await.unwrap();
    assert_eq!(error_code(forged).await, (403, "cross_origin_rejected".into()));
}
