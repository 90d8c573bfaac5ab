//! `lore serve` and `lore migrate`.

use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context;
use chrono::Utc;
use engine::{Lore, Settings};
use lore_toolserver::ToolServer;
use tokio::net::TcpListener;

use crate::{console, http, AppState};

/// Builds the whole application for an opened engine.
pub fn app(lore: Lore) -> axum::Router {
    let leptos = console::leptos_options(&lore.settings);
    let tools = ToolServer::open(lore.clone());
    http::router(AppState { lore, tools, leptos, http_metrics: http::prometheus::HttpMetrics::default() })
}

/// Serves until `shutdown` resolves, then finishes in-flight requests. The
/// indexing worker, the hourly folding of closed rollup days, the sweep of
/// expired application records, the eviction of idle tool-server sessions
/// and the watch that tells them of role and schema changes run beside the
/// server and stop with it; a job left unfinished is resumed by the next
/// start. What the answer path writes behind its requests (runs, answer cache
/// rows) is flushed last.
pub async fn serve(
    listener: TcpListener,
    lore: Lore,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop_worker, stopped) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(engine::ingest::jobs::work(lore.corpus().clone(), stopped.clone()));
    let sweeper = tokio::spawn(engine::appdb::records::keep_sweeping(lore.corpus().clone(), stopped.clone()));
    let tools = ToolServer::open(lore.clone());
    let evictor = tokio::spawn(lore_toolserver::sessions::keep_evicting(tools.clone(), stopped.clone()));
    let listening = tokio::spawn(lore_toolserver::hub::keep_listening(tools.clone()));
    let rollups = tokio::spawn(engine::metrics::keep_closing_days(lore.clone(), stopped));
    let shutdown = async move {
        shutdown.await;
        // Open push channels would keep their connections, and the shutdown, waiting.
        tools.hub().close_all();
    };
    let served = axum::serve(listener, app(lore.clone()).into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving HTTP");
    let _ = stop_worker.send(true);
    worker.abort();
    rollups.abort();
    sweeper.abort();
    evictor.abort();
    listening.abort();
    lore.flush_writes().await;
    served
}

/// `lore serve`: serves until Ctrl-C or SIGTERM. The operation `restart`
/// ends the serving the same graceful way, then the configuration (`config`
/// and what `set_configuration` saved) is read again and Lore opens anew on
/// the same address.
pub async fn run_from_cli(mut settings: Settings, config: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    for name in crate::config::ignored_env_vars() {
        tracing::warn!(variable = %name, "ignoring an environment variable that names no setting");
    }
    let (quit, quitting) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = quit.send(true);
    });
    let mut first = true;
    loop {
        let bind = settings.server.bind;
        let listener = TcpListener::bind(bind).await.with_context(|| format!("binding {bind}"))?;
        let bound = listener.local_addr().context("reading the bound address")?;
        // With port 0 the OS picks the port; the base URL must name the real one.
        settings.server.bind = bound;
        let lore = Lore::open(settings).await.context("opening Lore")?;
        tracing::info!(%bound, "Lore is listening");
        if first {
            announce(&lore).await?;
            fetch_model_files_if_missing(&lore);
            first = false;
        }
        let restart = lore.clone();
        let mut quit = quitting.clone();
        let restarting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let restarted = restarting.clone();
        serve(listener, lore, async move {
            tokio::select! {
                _ = quit.wait_for(|quit| *quit) => {}
                _ = restart.restart_requested() => restarted.store(true, std::sync::atomic::Ordering::SeqCst),
            }
        })
        .await?;
        if !restarting.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        tracing::info!("Lore is restarting");
        settings = crate::config::load(config.as_deref())?;
        // The same address: a port the OS picked stays the one callers know.
        settings.server.bind = bound;
    }
    tracing::info!("Lore stopped");
    Ok(())
}

/// Prints where Lore runs and how to sign in (once, at the first start).
async fn announce(lore: &Lore) -> anyhow::Result<()> {
    let base_url = lore.settings.base_url();
    // Printed, not logged: the sign-in link is a secret meant for this terminal only.
    println!("Lore is running at {base_url}/");
    if lore.settings.oidc_configured() {
        println!("Sign in through your identity provider at {base_url}/signin");
    } else {
        let token =
            engine::auth::bootstrap::issue(lore, Utc::now()).await.context("issuing the sign-in link")?;
        println!(
            "No identity provider is configured. Sign in once with this link (valid {} minutes, from this machine only):\n  {}",
            engine::auth::bootstrap::LINK_LIFETIME_MINUTES,
            engine::auth::bootstrap::link(lore, &token)
        );
    }
    Ok(())
}

/// Fetches, in the background, the model files this machine lacks: the
/// embedding model's, each bound embedded generation model's, and on a
/// fresh install the default embedded model, so the setup wizard's first
/// provider choice is ready. Readiness reports them missing until they
/// arrive; the progress bar draws on stderr when it is a terminal.
fn fetch_model_files_if_missing(lore: &Lore) {
    let lore = lore.clone();
    tokio::spawn(async move {
        let bar = crate::commands::models::FetchBar::new(false);
        let fetched = lore.fetch_missing_models(true, &|fetching| bar.show(fetching)).await;
        drop(bar);
        match fetched {
            Ok(fetched) if fetched.is_empty() => {}
            Ok(fetched) => tracing::info!(
                models = %fetched.join(", "),
                dir = %lore.settings.models_dir().display(),
                "fetched model files"
            ),
            Err(err) => tracing::warn!(error = %err, "model files could not be fetched"),
        }
    });
}

pub async fn migrate_from_cli(settings: Settings, json: bool) -> anyhow::Result<()> {
    engine::store::prepare_dirs(&settings)?;
    let db = engine::store::connect(&settings.database_url()).await.context("connecting to the database")?;
    let pending = engine::store::pending_migrations(&db).await?;
    engine::store::migrate(&db).await.context("applying migrations")?;
    if json {
        println!("{}", serde_json::json!({ "applied": pending }));
    } else if pending.is_empty() {
        println!("The database schema is up to date.");
    } else {
        println!("Applied {} migration(s): {}", pending.len(), pending.join(", "));
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
