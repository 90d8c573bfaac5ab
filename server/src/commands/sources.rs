//! `lore sources add|alter|list|enable|disable|reindex|rm`.

use app::wire::{audience_in_words, SourceView};
use engine::ingest::lifecycle;
use engine::{sources, Lore, Settings};

use super::jobs::run_job;
use super::output::{fail, invalid, print_json};
use super::{open, ACTOR};
use crate::cli::SourcesCommand;

pub async fn run(settings: Settings, command: SourcesCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    match command {
        SourcesCommand::Add {
            name,
            kind,
            url,
            branch,
            citation_url,
            discovery,
            include,
            exclude,
            max_pages,
            max_depth,
            database,
            table,
            title,
            text,
            template,
            url_template,
            conditions,
            source_config,
            volatility,
            audience,
            json,
        } => {
            let mut given = match source_config {
                None => serde_json::Map::new(),
                Some(raw) => match serde_json::from_str(&raw) {
                    Ok(serde_json::Value::Object(map)) => map,
                    Ok(_) => return Err(invalid("--source-config must be a JSON object")),
                    Err(err) => return Err(invalid(format!("--source-config is not JSON: {err}"))),
                },
            };
            let conditions = conditions
                .map(|raw| serde_json::from_str::<serde_json::Value>(&raw))
                .transpose()
                .map_err(|err| invalid(format!("--conditions is not JSON: {err}")))?;
            let list = |values: Vec<String>| (!values.is_empty()).then(|| values.into());
            // A git source's address is its `url`; a website's, its start.
            let url_key = if kind.trim() == "git" { "url" } else { "start_url" };
            for (key, value) in [
                (url_key, url.map(Into::into)),
                ("branch", branch.map(Into::into)),
                ("citation_url", citation_url.map(Into::into)),
                ("discovery", discovery.map(Into::into)),
                ("include", list(include)),
                ("exclude", list(exclude)),
                ("max_pages", max_pages.map(Into::into)),
                ("max_depth", max_depth.map(Into::into)),
                ("database", database.map(Into::into)),
                ("table", table.map(Into::into)),
                ("title", title.map(Into::into)),
                ("text", list(text)),
                ("template", template.map(Into::into)),
                ("url", url_template.map(Into::into)),
                ("conditions", conditions),
            ] {
                if let Some(value) = value {
                    given.insert(key.to_owned(), value);
                }
            }
            let config = (!given.is_empty()).then_some(serde_json::Value::Object(given));
            let new = sources::NewSource { name, kind, config, volatility, audience };
            let added = lifecycle::add_source(&lore, &ACTOR, new, "cli").await.map_err(fail)?;
            let view = SourceView::from(lifecycle::overview(&lore, added.source).await.map_err(fail)?);
            if json {
                print_json(&view);
            } else {
                println!("Created {} source {:?} ({}).", view.kind, view.name, view.id);
                match added.first_sync {
                    Some(_) if view.kind == "table" => println!(
                        "Its first sync is queued: a running `lore serve` starts it, or run it here with `lore sources reindex {}`. Its rows answer {}.",
                        view.id,
                        audience_in_words(&view.audience)
                    ),
                    Some(_) => println!(
                        "Its first crawl is queued: a running `lore serve` starts it, or run it here with `lore sources reindex {}`.",
                        view.id
                    ),
                    None => println!("Add files with `lore ingest PATH --name {:?}`.", view.name),
                }
            }
        }
        SourcesCommand::Alter { source, audience, json } => {
            let found = sources::find(&lore, &source).await.map_err(fail)?;
            let updated = sources::set_audience(&lore, &ACTOR, &found.id, &audience).await.map_err(fail)?;
            let view = SourceView::from(lifecycle::overview(&lore, updated).await.map_err(fail)?);
            if json {
                print_json(&view);
            } else {
                println!("{:?} now answers {}.", view.name, audience_in_words(&view.audience));
            }
        }
        SourcesCommand::List { json } => {
            let overviews = lifecycle::overviews(&lore).await.map_err(fail)?;
            let views: Vec<SourceView> = overviews.into_iter().map(SourceView::from).collect();
            if json {
                print_json(&views);
            } else if views.is_empty() {
                println!("No sources yet: `lore ingest PATH-OR-URL` adds one.");
            } else {
                println!(
                    "{:<36}  {:<24} {:<8} {:<9} {:>6} {:>7}  {:<16} freshness",
                    "id", "name", "kind", "status", "docs", "chunks", "audience"
                );
                for v in views {
                    let status = if v.enabled { v.status.clone() } else { "disabled".into() };
                    let freshness = match (v.fresh, &v.last_synced_at) {
                        (Some(true), Some(at)) => format!("fresh (synced {at})"),
                        (Some(false), Some(at)) => format!("stale (synced {at})"),
                        _ => "never synced".into(),
                    };
                    println!(
                        "{:<36}  {:<24} {:<8} {:<9} {:>6} {:>7}  {:<16} {freshness}",
                        v.id, v.name, v.kind, status, v.document_count, v.chunk_count, v.audience
                    );
                }
            }
        }
        SourcesCommand::Enable { source, json } => switch(&lore, &source, true, json).await?,
        SourcesCommand::Disable { source, json } => switch(&lore, &source, false, json).await?,
        SourcesCommand::Reindex { source, full, json } => {
            let source_id = match &source {
                Some(name) => Some(sources::find(&lore, name).await.map_err(fail)?.id),
                None if full => None,
                None => {
                    return Err(invalid("name a source, or pass --full to re-embed every source"));
                }
            };
            let queued =
                lifecycle::start_run(&lore, source_id.as_deref(), full, "cli").await.map_err(fail)?;
            run_job(&lore, &queued.id, json).await?;
        }
        SourcesCommand::Rm { source, json } => {
            let found = sources::find(&lore, &source).await.map_err(fail)?;
            sources::delete(&lore, &ACTOR, &found.id).await.map_err(fail)?;
            if json {
                print_json(&serde_json::json!({"deleted": found.id}));
            } else {
                println!("Deleted source {:?} with its documents and chunks.", found.name);
            }
        }
    }
    Ok(())
}

async fn switch(lore: &Lore, source: &str, enabled: bool, json: bool) -> anyhow::Result<()> {
    let found = sources::find(lore, source).await.map_err(fail)?;
    let updated = sources::set_enabled(lore, &ACTOR, &found.id, enabled).await.map_err(fail)?;
    if json {
        print_json(&SourceView::from(lifecycle::overview(lore, updated).await.map_err(fail)?));
    } else if enabled {
        println!("Enabled {:?}: its content is searchable again.", updated.name);
    } else {
        println!("Disabled {:?}: its content is kept but not searched.", updated.name);
    }
    Ok(())
}
