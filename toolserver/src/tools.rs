//! Each user's tools: the operation tools, the verb tools of every exported
//! resource with SPEC's names and schemas, and the custom tools; the
//! surface a session lists, and a call run through the same checks.

use super::*;

pub(super) fn operation_tools(lore: &Lore, permission: &Permission) -> Vec<Tool> {
    let Some(settings) = lore.settings.mcp.operations.as_ref() else {
        return Vec::new();
    };
    operations::OPERATIONS
        .iter()
        .filter(|spec| offered(settings, spec.name) && sees_operation(permission, spec))
        .map(|spec| {
            let mut input_schema = (spec.input_schema)();
            if let Some(object) = input_schema.as_object_mut() {
                object.remove("$schema");
                object.remove("title");
            }
            Tool {
                name: spec.name.to_owned(),
                description: spec.description.to_owned(),
                input_schema,
                output_schema: json!({"type": "object"}),
                read_only: spec.read_only(),
                destructive: spec.destructive(),
                target: Target::Operation(spec.name),
            }
        })
        .collect()
}

/// The resources exported to the tool server, with their tables.
pub(super) async fn exported(lore: &Lore) -> Result<Vec<(Entry, Option<Table>)>> {
    let mut found = Vec::new();
    for entry in resources::registry(lore).await?.entries() {
        if entry.export_types.mcp {
            let table = entry.resource.table(lore).await?;
            found.push((entry, table));
        }
    }
    Ok(found)
}

/// The verbs a resource offers as tools: put and patch give `update_` alone.
pub(super) fn tool_verbs(verbs: &[Verb]) -> Vec<Verb> {
    let both = verbs.contains(&Verb::Put) && verbs.contains(&Verb::Patch);
    verbs.iter().copied().filter(|v| !(both && *v == Verb::Patch)).collect()
}

pub(super) fn verb_prefix(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::Search => "search",
        Verb::Post => "create",
        Verb::Put => "update",
        Verb::Patch => "patch",
        Verb::Delete => "delete",
    }
}

pub(super) fn verb_access(verb: Verb) -> Access {
    match verb {
        Verb::Get | Verb::Search => Access::Read,
        Verb::Post => Access::Insert,
        Verb::Put | Verb::Patch => Access::Update,
        Verb::Delete => Access::Delete,
    }
}

pub(super) fn verb_description(verb: Verb, path: &str, table: Option<&Table>) -> String {
    let what = match table {
        Some(t) => format!("`{path}` (table {}.{}, primary key `{}`)", t.database, t.name, t.primary_key),
        None => format!("`{path}`"),
    };
    match verb {
        Verb::Get => format!("One record of {what} by primary key."),
        Verb::Search => format!("Records of {what} matching conditions, a page at a time."),
        Verb::Post => format!("Creates a record in {what}."),
        Verb::Put => format!("Writes the record of {what} at a primary key (created when missing)."),
        Verb::Patch => format!("Changes attributes of the record of {what} at a primary key."),
        Verb::Delete => format!("Deletes the record of {what} at a primary key."),
    }
}

/// `<name>` of every exported resource's path (see [`naming`]).
pub(super) fn names_of(exported: &[(Entry, Option<Table>)]) -> std::collections::BTreeMap<String, String> {
    naming::names(
        &exported
            .iter()
            .map(|(entry, table)| naming::Named {
                path: &entry.path,
                database: table.as_ref().map(|t| t.database.as_str()),
                since: table.as_ref().map(Table::exported_since),
            })
            .collect::<Vec<_>>(),
    )
}

pub(super) async fn application_tools(lore: &Lore, caller: &Caller) -> Result<Vec<Tool>> {
    let permission = permission_of(caller);
    let permission = permission.as_ref();
    let exported = exported(lore).await?;
    let names = names_of(&exported);
    let mut tools = Vec::new();
    for (entry, table) in &exported {
        let name = names.get(&entry.path).cloned().unwrap_or_else(|| entry.path.clone());
        for verb in tool_verbs(&entry.resource.verbs()) {
            if let Some(t) = table {
                if !permission.may(&t.database, &t.name, verb_access(verb)) {
                    continue;
                }
            }
            tools.push(Tool {
                name: format!("{}_{name}", verb_prefix(verb)),
                description: verb_description(verb, &entry.path, table.as_ref()),
                input_schema: schema::verb_input(table.as_ref(), permission, verb),
                output_schema: schema::verb_output(verb),
                read_only: matches!(verb, Verb::Get | Verb::Search),
                destructive: verb == Verb::Delete,
                target: Target::Verb { path: entry.path.clone(), verb },
            });
        }
    }
    tools.extend(custom_tools(lore, caller).await?);
    Ok(tools)
}

/// The custom tools of the exported resources that `caller` is offered
/// (by default every one, to every session, anonymous ones too: each
/// method checks its caller itself, SPEC rule 4).
pub(super) async fn custom_tools(lore: &Lore, caller: &Caller) -> Result<Vec<Tool>> {
    let mut tools = Vec::new();
    for entry in resources::registry(lore).await?.entries() {
        if !entry.export_types.mcp {
            continue;
        }
        for custom in entry.resource.tools() {
            if !entry.resource.offers_tool(lore, caller, &custom).await {
                continue;
            }
            tools.push(Tool {
                name: custom.name.clone(),
                description: custom.description,
                input_schema: custom.input_schema,
                output_schema: json!({"type": "object"}),
                read_only: false,
                destructive: false,
                target: Target::Custom { path: entry.path.clone(), name: custom.name },
            });
        }
    }
    Ok(tools)
}

/// What application tool `name` runs, if this user is offered it: the
/// same names and filter as [`application_tools`], without building every
/// schema.
pub(super) async fn application_target(lore: &Lore, caller: &Caller, name: &str) -> Result<Option<Target>> {
    // Custom tools first: finding one needs no table.
    for entry in resources::registry(lore).await?.entries() {
        if !entry.export_types.mcp {
            continue;
        }
        if let Some(custom) = entry.resource.tools().into_iter().find(|t| t.name == name) {
            let offered = entry.resource.offers_tool(lore, caller, &custom).await;
            return Ok(offered.then(|| Target::Custom { path: entry.path.clone(), name: custom.name }));
        }
    }
    if caller.principal.is_none() {
        // An anonymous session calls custom tools only.
        return Ok(None);
    }
    let permission = permission_of(caller);
    let permission = permission.as_ref();
    let exported = exported(lore).await?;
    let names = names_of(&exported);
    for (entry, table) in &exported {
        let Some(base) = names.get(&entry.path) else { continue };
        for verb in tool_verbs(&entry.resource.verbs()) {
            if format!("{}_{base}", verb_prefix(verb)) != name {
                continue;
            }
            let offered =
                table.as_ref().is_none_or(|t| permission.may(&t.database, &t.name, verb_access(verb)));
            return Ok(offered.then(|| Target::Verb { path: entry.path.clone(), verb }));
        }
    }
    Ok(None)
}

/// The URI of an exported resource's descriptor: its REST address.
pub(super) fn descriptor_uri(lore: &Lore, path: &str) -> String {
    format!("{}/data/{path}", lore.settings.base_url())
}

/// Whether `resources/list` shows this user the descriptor of an exported
/// resource: one served over REST (its descriptor is its REST address, so
/// never one that points at nothing) with REST verbs, on a table the user
/// may see.
pub(super) fn described(entry: &Entry, table: Option<&Table>, permission: &Permission) -> bool {
    entry.export_types.http
        && !entry.resource.verbs().is_empty()
        && table.is_none_or(|t| permission.sees_table(&t.database, &t.name))
}

/// What `caller` sees on `profile`, tools sorted by name: the tools, the
/// documents of the registered resources that the profile lists (the
/// tool server's own first, see [`super::documents`]) and, on the
/// application profile, the descriptor of each exported resource the
/// caller may see.
pub async fn surface(lore: &Lore, profile: Profile, caller: &Caller) -> Result<Surface> {
    let permission = permission_of(caller);
    let mut surface = Surface::default();
    if caller.principal.is_none() {
        // An anonymous session (`mcp.application.anonymousCustomTools`)
        // sees the custom tools and nothing else.
        if profile == Profile::Application {
            surface.tools = custom_tools(lore, caller).await?;
            surface.tools.sort_by(|a, b| a.name.cmp(&b.name));
        }
        return Ok(surface);
    }
    let registry = resources::registry(lore).await?;
    let mut entries = registry.entries();
    // The tool server's own documents first, as clients have always seen them.
    entries.sort_by_key(|entry| entry.path != super::documents::PATH);
    for entry in entries.iter().filter(|entry| entry.export_types.mcp) {
        for document in entry.resource.documents().iter().filter(|d| d.profiles.contains(&profile)) {
            if document.is_template() {
                surface.templates.push(Template {
                    uri_template: document.uri.into(),
                    name: document.name.into(),
                    description: document.description.into(),
                    mime_type: "application/json",
                });
                for instance in entry.resource.instances(lore, profile, caller, document).await? {
                    surface.resources.push(Listed {
                        uri: instance.uri,
                        name: instance.name,
                        description: instance.description,
                        mime_type: "application/json",
                    });
                }
            } else {
                surface.resources.push(Listed {
                    uri: document.uri.into(),
                    name: document.name.into(),
                    description: document.description.into(),
                    mime_type: "application/json",
                });
            }
        }
    }
    match profile {
        Profile::Operations => surface.tools = operation_tools(lore, &permission),
        Profile::Application => {
            for (entry, table) in exported(lore).await? {
                if !described(&entry, table.as_ref(), &permission) {
                    continue;
                }
                surface.resources.push(Listed {
                    uri: descriptor_uri(lore, &entry.path),
                    name: entry.path.clone(),
                    description: format!(
                        "The exported resource `{}`: read its records with the get_ and search_ tools.",
                        entry.path
                    ),
                    mime_type: "application/json",
                });
            }
            surface.tools = application_tools(lore, caller).await?;
        }
    }
    surface.tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(surface)
}

/// Runs tool `name` of `profile` for `caller`. A tool the caller does not
/// see is unknown to it; what runs checks the caller again (the operation's
/// or the table's permission check), and a custom tool checks it itself.
pub async fn call(lore: &Lore, profile: Profile, caller: &Caller, name: &str, args: Value) -> Result<Output> {
    let unknown = || engine::Error::from(AppDbError::UnknownTool(name.to_owned()));
    let arguments = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        _ => return Err(AppDbError::Invalid("`arguments` must be an object".into()).into()),
    };
    let target = {
        let permission = permission_of(caller);
        match profile {
            Profile::Operations => lore.settings.mcp.operations.as_ref().and_then(|settings| {
                operations::OPERATIONS
                    .iter()
                    .find(|spec| spec.name == name)
                    .filter(|spec| offered(settings, spec.name) && sees_operation(&permission, spec))
                    .map(|spec| Target::Operation(spec.name))
            }),
            Profile::Application => application_target(lore, caller, name).await?,
        }
    }
    .ok_or_else(unknown)?;
    match target {
        Target::Operation(operation) => {
            let principal = caller.principal.as_ref().ok_or(engine::keys::KeyError::Missing)?;
            let mut body = arguments;
            body.insert("operation".into(), Value::String(operation.to_owned()));
            Ok(Output::Operation(operations::dispatch(lore, principal, Value::Object(body)).await?))
        }
        Target::Custom { path, name } => Ok(Output::Custom(
            resources::call_tool(lore, caller, &path, &name, Value::Object(arguments)).await?,
        )),
        Target::Verb { path, verb } => run_verb(lore, caller, &path, verb, arguments).await.map(Output::Json),
    }
}

pub(super) async fn run_verb(
    lore: &Lore,
    caller: &Caller,
    path: &str,
    verb: Verb,
    mut args: Map<String, Value>,
) -> Result<Value> {
    let entry = resources::registry(lore)
        .await?
        .entry(path)
        .ok_or_else(|| engine::Error::from(AppDbError::UnknownResource(path.to_owned())))?;
    let resource = &entry.resource;
    let table = resource.table(lore).await?;
    let key_name = table.as_ref().map(|t| t.primary_key.clone()).unwrap_or_else(|| "id".into());
    let take_key = |args: &mut Map<String, Value>| {
        args.get(&key_name)
            .filter(|v| !v.is_null())
            .cloned()
            .ok_or_else(|| engine::Error::from(AppDbError::MissingAttribute(key_name.clone())))
    };
    let attribute_list = |args: &mut Map<String, Value>, field: &str| -> Result<Vec<String>> {
        match args.remove(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(value) => serde_json::from_value(value).map_err(|_| {
                AppDbError::Invalid(format!("`{field}` must be a list of attribute names")).into()
            }),
        }
    };
    match verb {
        Verb::Get => {
            let id = take_key(&mut args)?;
            let select = attribute_list(&mut args, "get_attributes")?;
            let found = resource.get(lore, caller, &id, &select).await?;
            Ok(json!({"record": found.map(Value::Object)}))
        }
        Verb::Search => {
            let search: SearchArgs = serde_json::from_value(Value::Object(args))
                .map_err(|err| AppDbError::Invalid(format!("search: {err}")))?;
            let query = Query {
                conditions: search
                    .conditions
                    .into_iter()
                    .map(|c| engine::appdb::records::Criterion {
                        attribute: c.search_attribute,
                        search_type: c.search_type.unwrap_or(engine::appdb::records::SearchType::Equals),
                        value: c.search_value,
                    })
                    .collect(),
                operator: search.operator,
                select: search.get_attributes,
                limit: search.limit,
                cursor: search.cursor,
            };
            let page = resource.search(lore, caller, &query).await?;
            Ok(json!({"records": page.records, "next_cursor": page.next_cursor}))
        }
        Verb::Post => Ok(json!({"id": resource.post(lore, caller, args).await?})),
        Verb::Put => {
            let id = take_key(&mut args)?;
            resource.put(lore, caller, &id, args).await?;
            Ok(json!({"updated": true}))
        }
        Verb::Patch => {
            let id = take_key(&mut args)?;
            Ok(json!({"updated": resource.patch(lore, caller, &id, args).await?}))
        }
        Verb::Delete => {
            let id = take_key(&mut args)?;
            Ok(json!({"deleted": resource.delete(lore, caller, &id).await?}))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchArgs {
    #[serde(default)]
    pub(super) conditions: Vec<ConditionArg>,
    #[serde(default)]
    pub(super) operator: engine::appdb::records::Operator,
    #[serde(default)]
    pub(super) get_attributes: Vec<String>,
    #[serde(default)]
    pub(super) limit: Option<u64>,
    #[serde(default)]
    pub(super) cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ConditionArg {
    pub(super) search_attribute: String,
    #[serde(default)]
    pub(super) search_type: Option<engine::appdb::records::SearchType>,
    pub(super) search_value: Value,
}
