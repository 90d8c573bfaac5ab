//! The application-database schema file: the subset of GraphQL SDL that
//! HarperDB's `schema.graphql` uses, parsed into the tables it declares.
//! Nothing here touches the catalog; `schema` applies what this returns.
//!
//! Only `type Name @directives { fields }` definitions are read (`#`
//! comments; commas count as whitespace). A type with `@table(database,
//! table, expiration)` is a table: `database` defaults to
//! [`DEFAULT_DATABASE`], `table` to the type's name, and `expiration` (whole
//! seconds, at least 1) is absent unless given. `@export(name, http, mcp)`
//! on a table exports it under `name` (default the table's name; letters,
//! digits, `_`, `-` and inner `/`), over HTTP and MCP unless turned off.
//! A type without `@table` is only a shape that fields may name (they are
//! then `Object`); its fields take no directives.
//!
//! A field is `name: Type` with `!` for not nullable, where `Type` is one
//! of the catalog's scalar names, `[T]` (`Array`, `T` checked too) or a
//! declared type (`Object`). Field directives: `@primaryKey` (exactly one
//! per table, never nullable, of a type the catalog accepts as a key, not
//! managed), `@indexed`, `@createdTime`/`@updatedTime`/`@expiresAt` (at most
//! one field each, of type Float, Long, Int or Date) and `@computed(from:
//! "expr")`. A computed field is not also key, indexed or managed, and its
//! expression reads only stored fields of its own table: not itself, not
//! another computed field (whose inputs' read permissions would then go
//! unchecked). Two tables at one `database.table`, or exported at one
//! path, are refused.
//!
//! Every error names the line of the token at fault. Expressions are
//! [`Computed`]: numbers, `'strings'`, attribute names, `+ - * /`, unary
//! minus and parentheses, at most [`MAX_EXPRESSION_TOKENS`] tokens.

use std::collections::{HashMap, HashSet};
use std::iter::Peekable;
use std::str::Chars;

use serde_json::{Map, Value};

use super::catalog::{
    check_attribute_name, check_database_name, AttrType, Managed, Member, Shape, DEFAULT_DATABASE,
};
use super::AppDbError;

/// The longest expression `@computed` takes, in tokens: it keeps the
/// parser's and evaluator's recursion shallow.
pub const MAX_EXPRESSION_TOKENS: usize = 200;

/// Why a schema file was refused, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct SchemaError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> SchemaError {
    SchemaError { line, message: message.into() }
}

/// A `type` with `@table`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclaredTable {
    pub line: usize,
    pub type_name: String,
    pub database: String,
    pub table: String,
    pub primary_key: String,
    /// Seconds after its last write a row expires.
    pub expiration: Option<u64>,
    pub export: Option<Export>,
    /// In source order.
    pub fields: Vec<DeclaredField>,
}

/// The resource paths Lore registers itself, which no table may be
/// exported at: `lore` serves the `answer` and `retrieve` tools. (The tool
/// server's own documents sit at `svc:`, which no export name can spell.)
pub const RESERVED_PATHS: [&str; 1] = ["lore"];

/// `@export`: the resource path and the surfaces that serve it.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    pub path: String,
    pub http: bool,
    pub mcp: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeclaredField {
    pub line: usize,
    pub name: String,
    pub kind: AttrType,
    pub nullable: bool,
    pub indexed: bool,
    pub managed: Option<Managed>,
    pub computed: Option<Computed>,
    /// What an `Object` or `Array` field holds (see [`member`]).
    pub shape: Option<Shape>,
}

/// How deep a field's declared types are followed into its [`Shape`], and
/// how many members one field's shape holds at most: a type that refers to
/// itself stops there as a bare object.
const SHAPE_DEPTH: usize = 8;
const SHAPE_MEMBERS: usize = 500;

/// Parses a schema file into its tables, in source order.
pub fn parse(source: &str) -> Result<Vec<DeclaredTable>, SchemaError> {
    let (tokens, end_line) = tokenize(source)?;
    let mut parser = Parser { tokens, pos: 0, end_line };
    let mut types = Vec::new();
    while parser.peek().is_some() {
        types.push(parser.definition()?);
    }
    check_types(&types)
}

// ---- Tokens ----

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Str(String),
    Int(u64),
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The tokens, and the line the file ends on.
fn tokenize(source: &str) -> Result<(Vec<Token>, usize), SchemaError> {
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        let tok = match c {
            '\n' => {
                line += 1;
                continue;
            }
            '#' => {
                while chars.next_if(|&c| c != '\n').is_some() {}
                continue;
            }
            ',' | '\u{feff}' => continue,
            c if c.is_whitespace() => continue,
            '{' | '}' | '(' | ')' | '[' | ']' | ':' | '!' | '@' => Tok::Punct(c),
            '"' => Tok::Str(string(&mut chars, line)?),
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut word = String::from(c);
                while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.') {
                    word.push(c);
                }
                if c.is_ascii_digit() {
                    Tok::Int(word.parse().map_err(|_| err(line, format!("`{word}` is not a whole number")))?)
                } else if word.contains('.') {
                    return Err(err(line, format!("unexpected `{word}`")));
                } else {
                    Tok::Name(word)
                }
            }
            other => return Err(err(line, format!("unexpected character `{other}`"))),
        };
        tokens.push(Token { tok, line });
    }
    Ok((tokens, line))
}

/// The rest of a `"…"` string (on one line; escapes `\"` and `\\`).
fn string(chars: &mut Peekable<Chars<'_>>, line: usize) -> Result<String, SchemaError> {
    let mut text = String::new();
    loop {
        match chars.next() {
            None | Some('\n') => return Err(err(line, "unterminated string")),
            Some('"') => return Ok(text),
            Some('\\') => match chars.next() {
                Some(c @ ('"' | '\\')) => text.push(c),
                Some(c) if c != '\n' => {
                    return Err(err(line, format!("unknown escape `\\{c}` in a string (only \\\" and \\\\)")))
                }
                _ => return Err(err(line, "unterminated string")),
            },
            Some(c) => text.push(c),
        }
    }
}

// ---- Syntax ----

struct RawType {
    line: usize,
    name: String,
    directives: Vec<Directive>,
    fields: Vec<RawField>,
}

struct RawField {
    line: usize,
    name: String,
    /// The named type, inside any brackets.
    ty: String,
    ty_line: usize,
    list: bool,
    non_null: bool,
    directives: Vec<Directive>,
}

struct Directive {
    line: usize,
    name: String,
    args: Vec<Arg>,
}

struct Arg {
    /// The value's line.
    line: usize,
    name: String,
    value: Lit,
}

enum Lit {
    Str(String),
    Int(u64),
    Bool(bool),
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    end_line: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.tok)
    }

    fn line(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end_line, |t| t.line)
    }

    fn eat(&mut self, punct: char) -> bool {
        let found = self.peek() == Some(&Tok::Punct(punct));
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, punct: char) -> Result<(), SchemaError> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{punct}`")))
        }
    }

    fn unexpected(&self, expected: &str) -> SchemaError {
        let found = match self.peek() {
            None => "the end of the file".to_owned(),
            Some(Tok::Str(_)) => "a string".to_owned(),
            Some(Tok::Name(name)) => format!("`{name}`"),
            Some(Tok::Int(n)) => format!("`{n}`"),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        };
        err(self.line(), format!("expected {expected}, found {found}"))
    }

    fn name(&mut self, expected: &str) -> Result<(String, usize), SchemaError> {
        match self.tokens.get(self.pos) {
            Some(Token { tok: Tok::Name(name), line }) => {
                let out = (name.clone(), *line);
                self.pos += 1;
                Ok(out)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// `type Name @directives { fields }`.
    fn definition(&mut self) -> Result<RawType, SchemaError> {
        if self.peek() != Some(&Tok::Name("type".to_owned())) {
            return Err(self.unexpected("`type` (the only definition a schema file holds)"));
        }
        self.pos += 1;
        let (name, line) = self.name("a type name")?;
        let directives = self.directives()?;
        self.expect('{')?;
        let mut fields = Vec::new();
        while !self.eat('}') {
            fields.push(self.field()?);
        }
        Ok(RawType { line, name, directives, fields })
    }

    /// `name: Type`, `name: [Type]`, either with `!`, then directives.
    fn field(&mut self) -> Result<RawField, SchemaError> {
        let (name, line) = self.name("a field name or `}`")?;
        self.expect(':')?;
        let mut depth = 0;
        while self.eat('[') {
            depth += 1;
        }
        let (ty, ty_line) = self.name("a type")?;
        for _ in 0..depth {
            self.eat('!');
            self.expect(']')?;
        }
        let non_null = self.eat('!');
        let directives = self.directives()?;
        Ok(RawField { line, name, ty, ty_line, list: depth > 0, non_null, directives })
    }

    fn directives(&mut self) -> Result<Vec<Directive>, SchemaError> {
        let mut directives = Vec::new();
        while self.eat('@') {
            let (name, line) = self.name("a directive name")?;
            let mut args: Vec<Arg> = Vec::new();
            if self.eat('(') {
                while !self.eat(')') {
                    let (arg, arg_line) = self.name("an argument name or `)`")?;
                    self.expect(':')?;
                    let line = self.line();
                    let value = self.value()?;
                    if args.iter().any(|a| a.name == arg) {
                        return Err(err(arg_line, format!("`{arg}` is given twice to `@{name}`")));
                    }
                    args.push(Arg { line, name: arg, value });
                }
            }
            directives.push(Directive { line, name, args });
        }
        Ok(directives)
    }

    fn value(&mut self) -> Result<Lit, SchemaError> {
        let lit = match self.peek() {
            Some(Tok::Str(s)) => Lit::Str(s.clone()),
            Some(Tok::Int(n)) => Lit::Int(*n),
            Some(Tok::Name(n)) if n == "true" || n == "false" => Lit::Bool(n == "true"),
            _ => return Err(self.unexpected("a string, a whole number, `true` or `false`")),
        };
        self.pos += 1;
        Ok(lit)
    }
}

impl Directive {
    fn check_args(&self, known: &[&str]) -> Result<(), SchemaError> {
        match self.args.iter().find(|a| !known.contains(&a.name.as_str())) {
            None => Ok(()),
            Some(a) if known.is_empty() => Err(err(a.line, format!("`@{}` takes no arguments", self.name))),
            Some(a) => Err(err(
                a.line,
                format!("`@{}` has no argument `{}` (it takes {})", self.name, a.name, known.join(", ")),
            )),
        }
    }

    fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|a| a.name == name)
    }

    fn wrong(&self, arg: &Arg, expected: &str) -> SchemaError {
        err(arg.line, format!("`{}` of `@{}` must be {expected}", arg.name, self.name))
    }

    fn string(&self, name: &str) -> Result<Option<(&str, usize)>, SchemaError> {
        match self.arg(name) {
            None => Ok(None),
            Some(Arg { value: Lit::Str(s), line, .. }) => Ok(Some((s.as_str(), *line))),
            Some(arg) => Err(self.wrong(arg, "a string")),
        }
    }

    fn int(&self, name: &str) -> Result<Option<(u64, usize)>, SchemaError> {
        match self.arg(name) {
            None => Ok(None),
            Some(Arg { value: Lit::Int(n), line, .. }) => Ok(Some((*n, *line))),
            Some(arg) => Err(self.wrong(arg, "a whole number")),
        }
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, SchemaError> {
        match self.arg(name) {
            None => Ok(None),
            Some(Arg { value: Lit::Bool(b), .. }) => Ok(Some(*b)),
            Some(arg) => Err(self.wrong(arg, "`true` or `false`")),
        }
    }
}

// ---- Meaning ----

/// The catalog's naming `rule` (whose message says "valid `rule_what`
/// name"), with the message naming what the name is here.
fn check_named(
    line: usize,
    what: &str,
    name: &str,
    rule: fn(&str) -> Result<(), AppDbError>,
    rule_what: &str,
) -> Result<(), SchemaError> {
    rule(name).map_err(|e| {
        err(line, e.to_string().replace(&format!("valid {rule_what} name"), &format!("valid {what} name")))
    })
}

fn check_types(types: &[RawType]) -> Result<Vec<DeclaredTable>, SchemaError> {
    let mut names = HashMap::new();
    for t in types {
        check_named(t.line, "type", &t.name, check_attribute_name, "attribute")?;
        if AttrType::parse(&t.name).is_ok() {
            return Err(err(t.line, format!("`{}` is a built-in type and cannot be declared", t.name)));
        }
        if names.insert(t.name.as_str(), t).is_some() {
            return Err(err(t.line, format!("type `{}` is declared twice", t.name)));
        }
    }
    let mut tables: Vec<DeclaredTable> = Vec::new();
    for t in types {
        let Some(table) = check_type(t, &names)? else { continue };
        if tables.iter().any(|o| o.database == table.database && o.table == table.table) {
            return Err(err(
                t.line,
                format!("`{}.{}` is declared by two types", table.database, table.table),
            ));
        }
        if let Some(export) = &table.export {
            if tables.iter().any(|o| o.export.as_ref().is_some_and(|e| e.path == export.path)) {
                return Err(err(t.line, format!("two tables are exported as `{}`", export.path)));
            }
        }
        tables.push(table);
    }
    Ok(tables)
}

/// A type: its table, if it has `@table`.
fn check_type(t: &RawType, types: &Types<'_>) -> Result<Option<DeclaredTable>, SchemaError> {
    let (mut table_at, mut export_at) = (None, None);
    for d in &t.directives {
        let slot = match d.name.as_str() {
            "table" => &mut table_at,
            "export" => &mut export_at,
            other => return Err(err(d.line, format!("unknown type directive `@{other}`"))),
        };
        if slot.replace(d).is_some() {
            return Err(err(d.line, format!("`@{}` is given twice", d.name)));
        }
    }
    if let (None, Some(d)) = (table_at, export_at) {
        return Err(err(d.line, format!("`@export` needs `@table` on type `{}`", t.name)));
    }
    let mut fields: Vec<DeclaredField> = Vec::new();
    let mut primary_key: Option<String> = None;
    for raw in &t.fields {
        let (field, is_key) = check_field(raw, types, table_at.is_some())?;
        if fields.iter().any(|f| f.name == field.name) {
            return Err(err(raw.line, format!("field `{}` is declared twice", field.name)));
        }
        if is_key {
            if let Some(first) = &primary_key {
                return Err(err(
                    raw.line,
                    format!("`{}` and `{first}` are both `@primaryKey`: a table has one", field.name),
                ));
            }
            primary_key = Some(field.name.clone());
        }
        if let Some(managed) = field.managed {
            if fields.iter().any(|f| f.managed == Some(managed)) {
                return Err(err(raw.line, format!("`{}` is on two fields", managed_directive(managed))));
            }
        }
        fields.push(field);
    }
    let Some(table_at) = table_at else { return Ok(None) };
    let Some(primary_key) = primary_key else {
        return Err(err(t.line, format!("type `{}` has no `@primaryKey` field", t.name)));
    };
    for field in &fields {
        let Some(computed) = &field.computed else { continue };
        for input in computed.inputs() {
            let why = match fields.iter().find(|f| f.name == input) {
                _ if input == field.name => "it cannot read itself".to_owned(),
                None => format!("type `{}` declares no field `{input}`", t.name),
                Some(f) if f.computed.is_some() => format!("`{input}` is itself computed"),
                Some(_) => continue,
            };
            return Err(err(
                field.line,
                format!("`{}` cannot be computed from `{input}`: {why}", field.name),
            ));
        }
    }

    table_at.check_args(&["database", "table", "expiration"])?;
    let (database, line) = table_at.string("database")?.unwrap_or((DEFAULT_DATABASE, table_at.line));
    check_named(line, "database", database, check_database_name, "database")?;
    if database == super::system::DATABASE {
        return Err(err(line, format!("`{database}` is Lore's own database: declare tables in another")));
    }
    let (table, line) = table_at.string("table")?.unwrap_or((t.name.as_str(), t.line));
    check_named(line, "table", table, check_database_name, "database")?;
    let expiration = match table_at.int("expiration")? {
        Some((0, line)) => return Err(err(line, "`expiration` must be at least 1 second")),
        other => other.map(|(seconds, _)| seconds),
    };
    let export = match export_at {
        None => None,
        Some(d) => {
            d.check_args(&["name", "http", "mcp"])?;
            let (path, line) = d.string("name")?.unwrap_or((table, d.line));
            let valid = !path.is_empty()
                && !path.starts_with('/')
                && !path.ends_with('/')
                && !path.contains("//")
                && path.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/'));
            if !valid {
                return Err(err(
                    line,
                    format!("`{path}` is not a valid export name (letters, digits, _, - and inner /)"),
                ));
            }
            if RESERVED_PATHS.contains(&path) {
                return Err(err(
                    line,
                    format!(
                        "`{path}` is Lore's own resource and cannot be an export name; choose another `name`"
                    ),
                ));
            }
            let (http, mcp) = (d.boolean("http")?.unwrap_or(true), d.boolean("mcp")?.unwrap_or(true));
            Some(Export { path: path.to_owned(), http, mcp })
        }
    };
    Ok(Some(DeclaredTable {
        line: t.line,
        type_name: t.name.clone(),
        database: database.to_owned(),
        table: table.to_owned(),
        primary_key,
        expiration,
        export,
        fields,
    }))
}

fn managed_directive(managed: Managed) -> &'static str {
    match managed {
        Managed::CreatedTime => "@createdTime",
        Managed::UpdatedTime => "@updatedTime",
        Managed::ExpiresAt => "@expiresAt",
    }
}

/// The declared types by name.
type Types<'a> = HashMap<&'a str, &'a RawType>;

/// What a field of type `ty` (in brackets when `list`) is, with what it
/// holds: an array's items, a declared type's fields, followed down to
/// [`SHAPE_DEPTH`] and while `budget` lasts (beyond either, a member has no
/// shape: a bare object or array). `None` for a type that is neither a
/// scalar nor declared (which the field's own check refuses).
fn member(
    name: &str,
    ty: &str,
    list: bool,
    non_null: bool,
    types: &Types<'_>,
    depth: usize,
    budget: &mut usize,
) -> Option<Member> {
    let declared = types.get(ty);
    let named = if declared.is_some() { AttrType::Object } else { AttrType::parse(ty).ok()? };
    let expand = *budget > 0;
    *budget = budget.saturating_sub(1);
    let shape = if !expand {
        None
    } else if list {
        // Whether the items may be null is not written down: they may.
        member("", ty, false, false, types, depth + 1, budget).map(|items| Shape::Array(Box::new(items)))
    } else {
        match declared {
            Some(t) if depth < SHAPE_DEPTH => Some(Shape::Object(
                t.fields
                    .iter()
                    .filter_map(|f| member(&f.name, &f.ty, f.list, f.non_null, types, depth + 1, budget))
                    .collect(),
            )),
            _ => None,
        }
    };
    let kind = if list { AttrType::Array } else { named };
    Some(Member { name: name.to_owned(), kind, nullable: !non_null, shape })
}

/// A field, and whether it is the primary key.
fn check_field(
    raw: &RawField,
    types: &Types<'_>,
    in_table: bool,
) -> Result<(DeclaredField, bool), SchemaError> {
    check_named(raw.line, "field", &raw.name, check_attribute_name, "attribute")?;
    let named = if types.contains_key(raw.ty.as_str()) {
        AttrType::Object
    } else {
        AttrType::parse(&raw.ty).map_err(|_| {
            err(raw.ty_line, format!("unknown type `{}` (neither a scalar nor a declared `type`)", raw.ty))
        })?
    };
    let kind = if raw.list { AttrType::Array } else { named };
    let mut budget = SHAPE_MEMBERS;
    let shape =
        member(&raw.name, &raw.ty, raw.list, raw.non_null, types, 0, &mut budget).and_then(|m| m.shape);
    let mut field = DeclaredField {
        line: raw.line,
        name: raw.name.clone(),
        kind,
        nullable: !raw.non_null,
        indexed: false,
        managed: None,
        computed: None,
        shape,
    };
    let mut key = false;
    let mut seen = HashSet::new();
    for d in &raw.directives {
        let known: &[&str] = match d.name.as_str() {
            "computed" => &["from"],
            "primaryKey" | "indexed" | "createdTime" | "updatedTime" | "expiresAt" => &[],
            other => return Err(err(d.line, format!("unknown field directive `@{other}`"))),
        };
        if !in_table {
            return Err(err(d.line, format!("`@{}` is only for fields of a `@table` type", d.name)));
        }
        if !seen.insert(d.name.as_str()) {
            return Err(err(d.line, format!("`@{}` is given twice", d.name)));
        }
        d.check_args(known)?;
        let managed = match d.name.as_str() {
            "primaryKey" => {
                key = true;
                continue;
            }
            "indexed" => {
                field.indexed = true;
                continue;
            }
            "createdTime" => Managed::CreatedTime,
            "updatedTime" => Managed::UpdatedTime,
            "expiresAt" => Managed::ExpiresAt,
            _ => {
                let Some((from, _)) = d.string("from")? else {
                    return Err(err(d.line, "`@computed` needs `from: \"expression\"`"));
                };
                let computed = Computed::parse(from).map_err(|why| {
                    err(raw.line, format!("`{}`: bad `@computed` expression: {why}", raw.name))
                })?;
                field.computed = Some(computed);
                continue;
            }
        };
        if let Some(other) = field.managed.replace(managed) {
            let message =
                format!("`{}` cannot be both {} and @{}", raw.name, managed_directive(other), d.name);
            return Err(err(d.line, message));
        }
    }
    if let Some(managed) = field.managed {
        if !matches!(kind, AttrType::Float | AttrType::Long | AttrType::Int | AttrType::Date) {
            return Err(err(
                raw.line,
                format!(
                    "`{}` is {}: it must be Float, Long, Int or Date",
                    raw.name,
                    managed_directive(managed)
                ),
            ));
        }
    }
    if field.computed.is_some() && (key || field.indexed || field.managed.is_some()) {
        return Err(err(
            raw.line,
            format!("`{}` is computed: it cannot also be @primaryKey, @indexed or managed", raw.name),
        ));
    }
    if key {
        if field.managed.is_some() {
            return Err(err(raw.line, format!("the primary key `{}` cannot be managed", raw.name)));
        }
        // What `catalog::create_table` refuses as a key, said here with the line.
        use AttrType::{Array, Blob, Boolean, Bytes, Float, Object};
        if matches!(kind, Float | Boolean | Object | Array | Bytes | Blob) {
            return Err(err(
                raw.line,
                format!("the primary key `{}` cannot be of type {}", raw.name, kind.name()),
            ));
        }
        field.nullable = false;
    }
    Ok((field, key))
}

// ---- Computed expressions ----

/// A `@computed(from: …)` expression: its text and its parsed form.
#[derive(Clone, Debug, PartialEq)]
pub struct Computed {
    pub source: String,
    expr: Expr,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Int(i64),
    Float(f64),
    Str(String),
    Attr(String),
    Neg(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Debug, PartialEq)]
enum ETok {
    Int(i64),
    Float(f64),
    Str(String),
    Ident(String),
    Sym(char),
}

impl Computed {
    pub fn parse(source: &str) -> Result<Computed, String> {
        let tokens = lex(source)?;
        if tokens.len() > MAX_EXPRESSION_TOKENS {
            return Err(format!("the expression is too long (at most {MAX_EXPRESSION_TOKENS} tokens)"));
        }
        let mut parser = ExprParser { tokens, pos: 0 };
        let expr = parser.sum()?;
        if let Some(extra) = parser.tokens.get(parser.pos) {
            return Err(format!("unexpected {} after the expression", describe(Some(extra))));
        }
        Ok(Computed { source: source.to_owned(), expr })
    }

    /// The value over `record` (see the module docs for the rules).
    pub fn eval(&self, record: &Map<String, Value>) -> Value {
        eval(&self.expr, record)
    }

    /// The attributes read, each once, in order of appearance.
    pub fn inputs(&self) -> Vec<String> {
        fn walk(expr: &Expr, out: &mut Vec<String>) {
            match expr {
                Expr::Attr(name) if !out.contains(name) => out.push(name.clone()),
                Expr::Neg(inner) => walk(inner, out),
                Expr::Bin(_, left, right) => {
                    walk(left, out);
                    walk(right, out);
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(&self.expr, &mut out);
        out
    }
}

fn lex(source: &str) -> Result<Vec<ETok>, String> {
    let mut tokens = Vec::new();
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        let tok = match c {
            c if c.is_whitespace() => continue,
            '+' | '-' | '*' | '/' | '(' | ')' => ETok::Sym(c),
            '\'' => {
                let mut text = String::new();
                loop {
                    match chars.next() {
                        None => return Err("unterminated string literal".to_owned()),
                        Some('\'') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('\'' | '\\')) => text.push(c),
                            _ => return Err("unknown escape in a string literal".to_owned()),
                        },
                        Some(c) => text.push(c),
                    }
                }
                ETok::Str(text)
            }
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut word = String::from(c);
                while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.') {
                    word.push(c);
                }
                let bad = format!("`{word}` is neither a number nor a name");
                let number = word.chars().all(|c| c.is_ascii_digit() || c == '.');
                if !c.is_ascii_digit() && !word.contains('.') {
                    ETok::Ident(word)
                } else if !number || word.ends_with('.') || word.matches('.').count() > 1 {
                    return Err(bad);
                } else if word.contains('.') {
                    ETok::Float(word.parse().map_err(|_| bad)?)
                } else {
                    ETok::Int(word.parse().map_err(|_| bad)?)
                }
            }
            other => return Err(format!("unexpected character `{other}`")),
        };
        tokens.push(tok);
    }
    Ok(tokens)
}

fn describe(tok: Option<&ETok>) -> String {
    match tok {
        None => "the end of the expression".to_owned(),
        Some(ETok::Int(n)) => format!("`{n}`"),
        Some(ETok::Float(f)) => format!("`{f}`"),
        Some(ETok::Str(s)) => format!("'{s}'"),
        Some(ETok::Ident(name)) => format!("`{name}`"),
        Some(ETok::Sym(c)) => format!("`{c}`"),
    }
}

struct ExprParser {
    tokens: Vec<ETok>,
    pos: usize,
}

impl ExprParser {
    fn next(&mut self) -> Option<ETok> {
        let tok = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        tok
    }

    fn op(&mut self, ops: [(char, Op); 2]) -> Option<Op> {
        let (_, op) = ops.into_iter().find(|(c, _)| self.tokens.get(self.pos) == Some(&ETok::Sym(*c)))?;
        self.pos += 1;
        Some(op)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut left = self.product()?;
        while let Some(op) = self.op([('+', Op::Add), ('-', Op::Sub)]) {
            left = Expr::Bin(op, Box::new(left), Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(op) = self.op([('*', Op::Mul), ('/', Op::Div)]) {
            left = Expr::Bin(op, Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.next() {
            Some(ETok::Sym('-')) => Ok(Expr::Neg(Box::new(self.unary()?))),
            Some(ETok::Int(n)) => Ok(Expr::Int(n)),
            Some(ETok::Float(f)) => Ok(Expr::Float(f)),
            Some(ETok::Str(s)) => Ok(Expr::Str(s)),
            Some(ETok::Ident(name)) => Ok(Expr::Attr(name)),
            Some(ETok::Sym('(')) => {
                let inner = self.sum()?;
                match self.next() {
                    Some(ETok::Sym(')')) => Ok(inner),
                    other => Err(format!("expected `)`, found {}", describe(other.as_ref()))),
                }
            }
            other => Err(format!("expected a value, found {}", describe(other.as_ref()))),
        }
    }
}

fn number(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn eval(expr: &Expr, record: &Map<String, Value>) -> Value {
    match expr {
        Expr::Int(n) => Value::from(*n),
        Expr::Float(f) => number(*f),
        Expr::Str(s) => Value::String(s.clone()),
        Expr::Attr(name) => record.get(name).cloned().unwrap_or(Value::Null),
        Expr::Neg(inner) => match eval(inner, record) {
            Value::Number(n) => match n.as_i64().and_then(i64::checked_neg) {
                Some(negated) => Value::from(negated),
                None => n.as_f64().map_or(Value::Null, |f| number(-f)),
            },
            _ => Value::Null,
        },
        Expr::Bin(op, left, right) => binary(*op, eval(left, record), eval(right, record)),
    }
}

fn binary(op: Op, left: Value, right: Value) -> Value {
    if op == Op::Add && (left.is_string() || right.is_string()) {
        return Value::String(text(&left) + &text(&right));
    }
    let (Value::Number(a), Value::Number(b)) = (&left, &right) else { return Value::Null };
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        // Exact while it fits; on overflow, as floats.
        let exact = match op {
            Op::Add => x.checked_add(y),
            Op::Sub => x.checked_sub(y),
            Op::Mul => x.checked_mul(y),
            Op::Div => None,
        };
        if let Some(n) = exact {
            return Value::from(n);
        }
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else { return Value::Null };
    match op {
        Op::Add => number(x + y),
        Op::Sub => number(x - y),
        Op::Mul => number(x * y),
        Op::Div if y == 0.0 => Value::Null,
        Op::Div => number(x / y),
    }
}

/// A value as concatenation shows it: null as nothing, integral numbers
/// without `.0`.
fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // f64's Display writes 3.0 as `3`.
            (_, _, Some(f)) => f.to_string(),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EXAMPLE: &str = r#"# a comment
type Dog @table(database: "dev", table: "dog", expiration: 3600) @export(name: "dogs") {
  id: ID @primaryKey
  name: String! @indexed
  breed: String
  age: Int
  tags: [String]
  owner: Owner          # a reference to another declared type
  photo: Bytes
  born: Date
  created: Float @createdTime
  updated: Float @updatedTime
  expires: Float @expiresAt
  ageInMonths: Float @computed(from: "age * 12")
  label: String @computed(from: "name + ' (' + breed + ')'")
}
type Owner { name: String, city: String }
"#;

    fn field(line: usize, name: &str, kind: AttrType) -> DeclaredField {
        DeclaredField {
            line,
            name: name.to_owned(),
            kind,
            nullable: true,
            indexed: false,
            managed: None,
            computed: None,
            shape: None,
        }
    }

    fn error(source: &str) -> String {
        parse(source).unwrap_err().to_string()
    }

    fn table(body: &str) -> String {
        format!("type T @table {{\n  id: ID @primaryKey\n{body}\n}}\n")
    }

    #[test]
    fn the_example_parses() {
        let tables = parse(EXAMPLE).unwrap();
        assert_eq!(tables.len(), 1, "Owner has no @table");
        let dog = &tables[0];
        assert_eq!((dog.line, dog.type_name.as_str()), (2, "Dog"));
        assert_eq!((dog.database.as_str(), dog.table.as_str()), ("dev", "dog"));
        assert_eq!(dog.primary_key, "id");
        assert_eq!(dog.expiration, Some(3600));
        assert_eq!(dog.export, Some(Export { path: "dogs".into(), http: true, mcp: true }));
        let names: Vec<&str> = dog.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names[..4], ["id", "name", "breed", "age"]);
        assert_eq!(dog.fields[0], DeclaredField { nullable: false, ..field(3, "id", AttrType::ID) });
        assert_eq!(
            dog.fields[1],
            DeclaredField { nullable: false, indexed: true, ..field(4, "name", AttrType::String) }
        );
        let text =
            |name: &str| Member { name: name.into(), kind: AttrType::String, nullable: true, shape: None };
        let tags = Shape::Array(Box::new(text("")));
        assert_eq!(dog.fields[4], DeclaredField { shape: Some(tags), ..field(7, "tags", AttrType::Array) });
        let owner = Shape::Object(vec![text("name"), text("city")]);
        assert_eq!(
            dog.fields[5],
            DeclaredField { shape: Some(owner), ..field(8, "owner", AttrType::Object) }
        );
        assert_eq!(dog.fields[6].kind, AttrType::Bytes);
        assert_eq!(
            dog.fields[8],
            DeclaredField { managed: Some(Managed::CreatedTime), ..field(11, "created", AttrType::Float) }
        );
        assert_eq!(dog.fields[10].managed, Some(Managed::ExpiresAt));
        let months = dog.fields[11].computed.as_ref().unwrap();
        assert_eq!(months.source, "age * 12");
        assert_eq!(months.inputs(), ["age"]);
        let label = dog.fields[12].computed.as_ref().unwrap();
        assert_eq!(label.inputs(), ["name", "breed"]);
    }

    #[test]
    fn defaults_apply() {
        let tables = parse("type Cat @table @export { id: Long! @primaryKey }").unwrap();
        let cat = &tables[0];
        assert_eq!((cat.database.as_str(), cat.table.as_str()), (DEFAULT_DATABASE, "Cat"));
        assert_eq!(cat.expiration, None);
        assert_eq!(cat.export, Some(Export { path: "Cat".into(), http: true, mcp: true }));
        let off = parse("type C @table @export(name: \"a/b\", mcp: false) { id: ID @primaryKey }").unwrap();
        assert_eq!(off[0].export, Some(Export { path: "a/b".into(), http: true, mcp: false }));
    }

    #[test]
    fn errors_name_their_line() {
        let cases = [
            (table("  x: Strin"), 3, "`Strin`"),
            ("# c\n\ninput Foo { a: Int }".to_owned(), 3, "`input`"),
            ("# c\ntype T @table {\n  a: Int\n}".to_owned(), 2, "@primaryKey"),
            (table("  k: ID @primaryKey"), 3, "both `@primaryKey`"),
            (table("\n  x: Int @unique"), 4, "`@unique`"),
            ("type T @table\n @cache { id: ID @primaryKey }".to_owned(), 2, "`@cache`"),
            (table("  id: String"), 3, "twice"),
            (table("  c: String @createdTime"), 3, "Float, Long, Int or Date"),
            (table("  a: Int @createdTime\n  b: Long @createdTime"), 4, "@createdTime"),
            (table("  a: Int @indexed @computed(from: \"1\")"), 3, "computed"),
            (table("  a: Int @computed(from: \"1 +\")"), 3, "expression"),
            (table("  a: Int @computed(from: \"b + 1\")"), 3, "`b`"),
            (
                table("  a: Int\n  b: Int @computed(from: \"a\")\n  c: Int @computed(from: \"b\")"),
                5,
                "computed",
            ),
            (table("  a: String @computed(from: \"\n\")"), 3, "unterminated"),
            ("type T @table(table: \"x__y\") { id: ID @primaryKey }".to_owned(), 1, "table name"),
            ("type T @table(expiration: \"1\") {\n id: ID @primaryKey }".to_owned(), 1, "whole number"),
            ("type O\n @export { a: Int }".to_owned(), 2, "@table"),
            (
                "type L @table(table: \"l\")\n  @export(name: \"lore\") { id: ID @primaryKey }".to_owned(),
                2,
                "`lore`",
            ),
            ("type lore @table @export { id: ID @primaryKey }".to_owned(), 1, "Lore's own"),
            (
                "type S @table(database: \"system\") { id: ID @primaryKey }".to_owned(),
                1,
                "Lore's own database",
            ),
            ("type O { a: Int @indexed }".to_owned(), 1, "@table"),
            (format!("{}type U @table(table: \"T\") {{ id: ID @primaryKey }}", table("")), 5, "data.T"),
            (table("  x: Int }"), 4, "expected `type`"),
            ("type T @table { id: Float @primaryKey }".to_owned(), 1, "Float"),
        ];
        for (source, line, part) in cases {
            let message = error(&source);
            assert!(message.starts_with(&format!("line {line}: ")), "{source:?} gave {message}");
            assert!(message.contains(part), "{source:?} gave {message}, not naming {part}");
        }
    }

    #[test]
    fn nested_types_are_followed_into_a_shape_and_a_cycle_stops() {
        let source = "type T @table {\n id: ID @primaryKey\n pack: [Dog!]!\n}\ntype Dog { name: String!, toys: [String], friend: Dog }";
        let tables = parse(source).unwrap();
        let Some(Shape::Array(items)) = &tables[0].fields[1].shape else {
            panic!("{:?}", tables[0].fields[1])
        };
        assert_eq!(items.kind, AttrType::Object);
        let Some(Shape::Object(fields)) = &items.shape else { panic!("{items:?}") };
        let names: Vec<(&str, AttrType, bool)> =
            fields.iter().map(|f| (f.name.as_str(), f.kind, f.nullable)).collect();
        assert_eq!(
            names,
            [
                ("name", AttrType::String, false),
                ("toys", AttrType::Array, true),
                ("friend", AttrType::Object, true)
            ]
        );
        // `friend: Dog` refers to itself: followed to the depth limit, then a bare object.
        let mut depth = 0;
        let mut at = fields[2].clone();
        while let Some(Shape::Object(inner)) = at.shape.clone() {
            depth += 1;
            at = inner.into_iter().find(|f| f.name == "friend").unwrap();
        }
        assert!(depth > 0 && depth < SHAPE_DEPTH, "{depth}");
        // A type that refers to itself many times stays within the budget.
        let wide = format!(
            "type T @table {{\n id: ID @primaryKey\n n: N\n}}\ntype N {{ {} }}",
            (0..20).map(|i| format!("f{i}: N")).collect::<Vec<_>>().join(", ")
        );
        let tables = parse(&wide).unwrap();
        fn count(shape: &Option<Shape>) -> usize {
            match shape {
                Some(Shape::Object(fields)) => fields.iter().map(|f| 1 + count(&f.shape)).sum(),
                Some(Shape::Array(items)) => 1 + count(&items.shape),
                None => 0,
            }
        }
        assert!(count(&tables[0].fields[1].shape) < SHAPE_MEMBERS + SHAPE_DEPTH * 20, "bounded");
    }

    #[test]
    fn only_the_database_name_system_is_lores() {
        let tables = parse("type T @table(table: \"system\") { id: ID @primaryKey }").unwrap();
        assert_eq!((tables[0].database.as_str(), tables[0].table.as_str()), (DEFAULT_DATABASE, "system"));
    }

    #[test]
    fn types_resolve() {
        let source = "type T @table {\n id: ID @primaryKey\n a: [O!]!\n b: Any\n c: O\n}\ntype O { x: Int }";
        let tables = parse(source).unwrap();
        let t = &tables[0];
        assert_eq!((t.fields[1].kind, t.fields[1].nullable), (AttrType::Array, false));
        assert_eq!(t.fields[2].kind, AttrType::Any);
        assert_eq!(t.fields[3].kind, AttrType::Object);
        assert!(error("type T @table { id: ID @primaryKey a: [Nope] }").contains("`Nope`"));
    }

    fn record(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn eval_with(source: &str, values: Value) -> Value {
        Computed::parse(source).unwrap().eval(&record(values))
    }

    #[test]
    fn computed_arithmetic() {
        assert_eq!(eval_with("age * 12", json!({"age": 3})), json!(36));
        assert_eq!(eval_with("1 + 2 * 3", json!({})), json!(7));
        assert_eq!(eval_with("(1 + 2) * 3", json!({})), json!(9));
        assert_eq!(eval_with("10 - 2 - 3", json!({})), json!(5));
        assert_eq!(eval_with("-age + 10", json!({"age": 3})), json!(7));
        assert_eq!(eval_with("7 / 2", json!({})), json!(3.5));
        assert_eq!(eval_with("x * 1.5", json!({"x": 2})), json!(3.0));
        assert_eq!(eval_with("age / 0", json!({"age": 3})), Value::Null);
        assert_eq!(eval_with("age * 12", json!({})), Value::Null);
        assert_eq!(eval_with("age * 12", json!({"age": null})), Value::Null);
        assert_eq!(eval_with("age * 2", json!({"age": "x"})), Value::Null);
        assert_eq!(eval_with("age + 1", json!({"age": true})), Value::Null);
    }

    #[test]
    fn computed_concatenation() {
        let rex = json!({"name": "Rex", "breed": "pug", "w": 3.0, "h": 2.5});
        assert_eq!(eval_with("name + ' (' + breed + ')'", rex.clone()), json!("Rex (pug)"));
        assert_eq!(eval_with("name + ' ' + w + ' ' + h", rex), json!("Rex 3 2.5"));
        assert_eq!(eval_with("name + breed", json!({"breed": "pug"})), json!("pug"));
        assert_eq!(eval_with("'it\\'s ' + 1", json!({})), json!("it's 1"));
    }

    #[test]
    fn computed_parse_errors_and_inputs() {
        for bad in ["", "1 +", "(1", "'x", "1 2", "a $ b", "1.", "a.b", "()"] {
            assert!(Computed::parse(bad).is_err(), "{bad:?} parsed");
        }
        let long = vec!["a"; MAX_EXPRESSION_TOKENS].join(" + ");
        assert!(Computed::parse(&long).is_err());
        assert_eq!(Computed::parse("a + b * a - (c)").unwrap().inputs(), ["a", "b", "c"]);
    }

    #[test]
    fn undeclared_inputs_are_refused() {
        let message = error(&table("  a: Int @computed(from: \"age * 2\")"));
        assert_eq!(message, "line 3: `a` cannot be computed from `age`: type `T` declares no field `age`");
    }
}
