//! `lore search QUERY`: the corpus diagnostic at the terminal.

use engine::Settings;

use super::open;
use super::output::{fail, print_json};

pub async fn run(
    settings: Settings,
    query: &str,
    top_k: usize,
    answer_as: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    super::models::ensure(&lore, json).await?;
    let asker = engine::asker::Asker::answering_as(answer_as).map_err(fail)?;
    let found = engine::asker::diagnose(&lore, &asker, query, Some(top_k), false).await.map_err(fail)?;
    let found = app::wire::SearchResults::from(found);
    if json {
        print_json(&found);
        return Ok(());
    }
    if found.results.is_empty() {
        println!("Nothing passed the score cutoff ({} candidates considered).", found.candidates);
    }
    for (rank, hit) in found.results.iter().enumerate() {
        let text = match hit.text_score {
            Some(score) => format!("{score:.2}"),
            None => "-".into(),
        };
        println!(
            "{}. {:.3}  {}{}  (vector {:.3}, text {text})",
            rank + 1,
            hit.score,
            hit.title,
            hit.heading.as_deref().map(|h| format!(" › {h}")).unwrap_or_default(),
            hit.vector_score
        );
        if let Some(url) = &hit.url {
            println!("   {url}");
        }
        let snippet: String = hit.text.chars().take(160).collect();
        println!("   {}", snippet.replace('\n', " "));
    }
    Ok(())
}
