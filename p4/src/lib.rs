//! `ironclos.p4` and its table/action schema as data.
//!
//! The P4_16 program in `p4/ironclos.p4` describes the ironclos pipeline for the v1model
//! architecture. This crate embeds it (`include_str!`) and scans it into a [`Schema`]: every
//! table (keys, match kinds, actions, default action, size) and every action (control-plane
//! parameters with their bit widths). Because the schema is parsed from the embedded file, it
//! cannot drift from it; [`Schema::check_names`] lets the dataplane's tests hold the Rust tables
//! to the P4 names. [`SWITCH_TABLES`] and [`SWITCH_SUPPORT_TABLES`] list the tables and actions of
//! the `switch` forwarding mode; a test here holds them to the program.
//!
//! The scanner is not a P4 compiler. It strips comments, string literals and preprocessor lines,
//! checks that brackets balance, and then recognises only what the schema needs:
//! `action NAME(PARAMS) { ... }`, `table NAME { ... }`, and the `typedef`, `type`, `const`,
//! `enum bit<N>` and `#define` declarations that give a parameter its width or a table its size.
//! Everything else is skipped. It never panics; malformed input gives a [`ParseError`] with a
//! 1-based line number.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

/// The ironclos P4_16 program (`p4/ironclos.p4`), embedded at compile time.
pub const SOURCE: &str = include_str!("../ironclos.p4");

/// The name of the built-in action declared in `core.p4`. Tables may list it without this file
/// declaring it.
pub const NO_ACTION: &str = "NoAction";

/// The tables of the `switch` forwarding mode (the Rust `Forwarder`, in
/// `dataplane/src/pipeline/forward.rs`), each with every action the P4 table lists, in the
/// program's order (`NoAction` aside). A test holds this list to [`SOURCE`].
///
/// `vlan_membership` has `set_native_vlan` besides `allow_vlan` and `drop_packet`: an untagged
/// frame on a trunk takes the trunk's native VLAN (Rust: `PortMode::Trunk { native, .. }`).
pub const SWITCH_TABLES: &[(&str, &[&str])] = &[
    (
        "port_vlan",
        &["set_access_vlan", "set_trunk", "set_routed_interface"],
    ),
    (
        "vlan_membership",
        &["allow_vlan", "set_native_vlan", "drop_packet"],
    ),
    ("mac_table", &["l2_forward", "flood"]),
    ("mac_learn", &["mac_known", "learn_mac"]),
    ("router_mac", &["route_packet"]),
    (
        "ipv4_lpm",
        &[
            "set_nexthop",
            "set_ecmp_group",
            "glean",
            "punt_local",
            "blackhole",
            "set_srv6_policy",
            "drop_packet",
        ],
    ),
    (
        "ipv6_lpm",
        &[
            "set_nexthop",
            "set_ecmp_group",
            "glean",
            "punt_local",
            "blackhole",
            "set_srv6_policy",
            "drop_packet",
        ],
    ),
    ("ecmp_group", &["set_nexthop"]),
    (
        "nexthop",
        &["rewrite_to_port", "rewrite_to_vlan", "resolve_nexthop"],
    ),
    (
        "my_sid",
        &["end", "end_x", "un", "ua", "end_dt4", "end_dt6", "end_dt46"],
    ),
    ("srv6_policy", &["h_encaps", "h_encaps_red", "drop_packet"]),
];

/// The QoS tables of the `switch` mode (Rust: `dataplane::qos`): classification at ingress and
/// ECN marking at egress. Queues, scheduling, shaping and the buffer are the traffic manager's,
/// outside P4.
pub const QOS_TABLES: &[(&str, &[&str])] = &[
    ("qos_trust", &["trust_dscp", "trust_pcp"]),
    ("dscp_to_tc", &["set_tc"]),
    ("pcp_to_tc", &["set_tc"]),
    ("lossless_tc", &["set_lossless"]),
    ("ecn_profile", &["set_ecn_profile"]),
];

/// Flowlet ECMP (Rust: `dataplane::tables::flowlet`): a group's balancing mode.
pub const FLOWLET_TABLES: &[(&str, &[&str])] = &[(
    "ecmp_balance",
    &["balance_hash", "balance_flowlet", "balance_per_packet"],
)];

/// The flowlet registers (Rust: the `FlowletTable` entry's `last_seen` and `flowlet_id`),
/// indexed by the group's base plus the flow hash masked to its table size.
pub const FLOWLET_REGISTERS: &[&str] = &["flowlet_last_seen", "flowlet_id"];

/// Tables the `switch` mode needs beyond [`SWITCH_TABLES`], for state the Rust forwarder keeps
/// in plain fields rather than in a table: the VRF of an L3 interface (`InterfaceSpec::vrf`) and
/// whether a VLAN leaves a port tagged (`Forwarder::egress_tagged`).
pub const SWITCH_SUPPORT_TABLES: &[(&str, &[&str])] = &[
    ("l3_interface", &["set_vrf"]),
    ("egress_vlan", &["egress_tagged", "egress_untagged"]),
];

/// The tables and actions of a P4 program, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    /// Every `table` declaration.
    pub tables: Vec<Table>,
    /// Every `action` declaration (identical duplicates, e.g. from `#if` branches, only once).
    pub actions: Vec<Action>,
}

/// One `table` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table's name as declared (not its `@name` annotation).
    pub name: String,
    /// The `key` property, in order; empty if the table has no key.
    pub keys: Vec<Key>,
    /// The action names of the `actions` property, in order (annotations and arguments dropped).
    pub actions: Vec<String>,
    /// The action named by `default_action` (or `const default_action`), if any.
    pub default_action: Option<String>,
    /// The `size` property, if given.
    pub size: Option<u64>,
}

/// One key element of a table: `EXPR : MATCH_KIND;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The key expression, with whitespace removed except between adjacent words
    /// (e.g. `standard_metadata.ingress_port`, `hdr.ipv4.dst_addr[15:0]`).
    pub field: String,
    /// The match kind.
    pub match_kind: MatchKind,
}

/// The match kind of a key element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MatchKind {
    /// `exact` (core.p4).
    Exact,
    /// `lpm` (core.p4).
    Lpm,
    /// `ternary` (core.p4).
    Ternary,
    /// `range` (v1model).
    Range,
    /// `optional` (v1model).
    Optional,
    /// `selector` (v1model, for action selectors).
    Selector,
    /// Any other identifier, as written.
    Other(String),
}

impl MatchKind {
    /// The match kind named `name`, as written in P4.
    pub fn from_name(name: &str) -> MatchKind {
        match name {
            "exact" => MatchKind::Exact,
            "lpm" => MatchKind::Lpm,
            "ternary" => MatchKind::Ternary,
            "range" => MatchKind::Range,
            "optional" => MatchKind::Optional,
            "selector" => MatchKind::Selector,
            other => MatchKind::Other(other.to_string()),
        }
    }

    /// The match kind's name as written in P4.
    pub fn as_str(&self) -> &str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
            MatchKind::Selector => "selector",
            MatchKind::Other(name) => name,
        }
    }
}

impl fmt::Display for MatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `action` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// The action's name as declared (not its `@name` annotation).
    pub name: String,
    /// The control-plane parameters (those without a direction), in order. Parameters with a
    /// direction (`in`, `out`, `inout`) are supplied by the data plane and are left out.
    pub params: Vec<Param>,
}

/// One control-plane parameter of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its width in bits (`bit<N>`/`int<N>` give N, `bool` gives 1; typedefs are resolved).
    pub bits: u32,
}

/// Why a P4 source could not be scanned, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based line at which the problem was found.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl ParseError {
    fn new(line: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

impl Schema {
    /// The table named `name`, if declared.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The (first) action named `name`, if declared. The built-in `NoAction` is not declared in
    /// the program and gives `None`.
    pub fn action(&self, name: &str) -> Option<&Action> {
        self.actions.iter().find(|a| a.name == name)
    }

    /// Checks the Rust side's names against the program: `tables` lists each table the Rust
    /// pipeline implements, with the names of the actions it uses for it.
    ///
    /// Returns every mismatch as a human-readable line: a table not declared in P4, an action
    /// not declared in P4 (`NoAction` counts as declared), and an action that the P4 table does
    /// not list in its `actions`. P4 tables and actions that the Rust side does not mention are
    /// not mismatches.
    pub fn check_names(&self, tables: &[(&str, &[&str])]) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        for &(table_name, actions) in tables {
            let table = self.table(table_name);
            if table.is_none() {
                problems.push(format!(
                    "table `{table_name}` is not declared in the P4 program"
                ));
            }
            for &action in actions {
                if action != NO_ACTION && self.action(action).is_none() {
                    problems.push(format!(
                        "action `{action}` (used by table `{table_name}`) is not declared in the \
                         P4 program"
                    ));
                }
                if let Some(table) = table
                    && !table.actions.iter().any(|a| a == action)
                {
                    problems.push(format!(
                        "action `{action}` is not listed in the actions of P4 table \
                         `{table_name}` (it lists: {})",
                        if table.actions.is_empty() {
                            "nothing".to_string()
                        } else {
                            table.actions.join(", ")
                        }
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// The schema of the embedded `ironclos.p4` ([`SOURCE`]), parsed once.
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| parse(SOURCE).expect("ironclos.p4 parses (a unit test checks it)"))
}

/// Scans a P4_16 source for its tables and actions.
///
/// Fails, with the line, on an unterminated comment or string, a character that is not P4,
/// unbalanced brackets, a malformed `action` or `table` declaration, a parameter whose width
/// cannot be determined, a table `size` that is not a number (or a known constant), and a table
/// that refers to an action that is not declared (other than `NoAction`) or whose default action
/// is not in its `actions`.
pub fn parse(source: &str) -> Result<Schema, ParseError> {
    let lexed = lex(source)?;
    check_brackets(&lexed.tokens)?;
    let mut scanner = Scanner::new(&lexed.tokens, source);
    scanner.collect_declarations(&lexed.defines);
    scanner.scan()
}

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// Identifier or keyword.
    Ident(String),
    /// Integer literal, as written (e.g. `0x8100`, `16w0x800`, `512`).
    Number(String),
    /// A string literal (contents dropped).
    Str,
    /// Any single punctuation character.
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

struct Lexed {
    tokens: Vec<Token>,
    /// `#define NAME NUMBER` lines.
    defines: HashMap<String, u64>,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Turns the source into tokens, dropping whitespace, comments, string contents and
/// preprocessor lines (remembering simple numeric `#define`s).
fn lex(source: &str) -> Result<Lexed, ParseError> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut defines = HashMap::new();
    let mut line = 1usize;
    let mut at_line_start = true;
    let mut i = 0usize;
    let at = |i: usize| chars.get(i).copied();

    while let Some(c) = at(i) {
        if c == '\n' {
            line += 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && at(i + 1) == Some('/') {
            while let Some(c) = at(i) {
                if c == '\n' {
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c == '/' && at(i + 1) == Some('*') {
            let start = line;
            i += 2;
            loop {
                match at(i) {
                    None => return Err(ParseError::new(start, "unterminated /* comment")),
                    Some('*') if at(i + 1) == Some('/') => {
                        i += 2;
                        break;
                    }
                    Some(c) => {
                        if c == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            continue;
        }
        if c == '#' && at_line_start {
            // A preprocessor line, with backslash continuations.
            let mut text = String::new();
            i += 1;
            while let Some(c) = at(i) {
                if c == '\\' && at(i + 1) == Some('\n') {
                    line += 1;
                    text.push(' ');
                    i += 2;
                    continue;
                }
                if c == '\\' && at(i + 1) == Some('\r') && at(i + 2) == Some('\n') {
                    line += 1;
                    text.push(' ');
                    i += 3;
                    continue;
                }
                if c == '\n' {
                    break;
                }
                text.push(c);
                i += 1;
            }
            let mut words = text.split_whitespace();
            if words.next() == Some("define")
                && let (Some(name), Some(value), None) = (words.next(), words.next(), words.next())
                && let Some(value) = parse_number(value)
            {
                defines.insert(name.to_string(), value);
            }
            continue;
        }
        at_line_start = false;
        let tok_line = line;
        if c == '"' {
            i += 1;
            loop {
                match at(i) {
                    None => return Err(ParseError::new(tok_line, "unterminated string literal")),
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        if at(i + 1) == Some('\n') {
                            line += 1;
                        }
                        i += 2;
                    }
                    Some(c) => {
                        if c == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            tokens.push(Token {
                tok: Tok::Str,
                line: tok_line,
            });
            continue;
        }
        if is_ident_start(c) {
            let start = i;
            while at(i).is_some_and(is_ident_continue) {
                i += 1;
            }
            let word: String = chars.get(start..i).unwrap_or_default().iter().collect();
            tokens.push(Token {
                tok: Tok::Ident(word),
                line: tok_line,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while at(i).is_some_and(is_ident_continue) {
                i += 1;
            }
            let word: String = chars.get(start..i).unwrap_or_default().iter().collect();
            tokens.push(Token {
                tok: Tok::Number(word),
                line: tok_line,
            });
            continue;
        }
        if c.is_ascii_punctuation() && !matches!(c, '$' | '`') {
            tokens.push(Token {
                tok: Tok::Punct(c),
                line: tok_line,
            });
            i += 1;
            continue;
        }
        return Err(ParseError::new(
            tok_line,
            format!("unexpected character {c:?}"),
        ));
    }
    Ok(Lexed { tokens, defines })
}

/// Parses a P4 integer literal: optional width prefix (`16w`, `8s`), then decimal or
/// `0x`/`0o`/`0b`/`0d` digits, with `_` separators allowed.
fn parse_number(text: &str) -> Option<u64> {
    let mut rest = text;
    // Width prefix: digits followed by `w` or `s`.
    if let Some(pos) = rest.find(['w', 's'])
        && pos > 0
        && rest
            .get(..pos)
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        rest = rest.get(pos + 1..)?;
    }
    let lower = rest.to_ascii_lowercase();
    let (digits, radix) = if let Some(d) = lower.strip_prefix("0x") {
        (d, 16)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (d, 8)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (d, 2)
    } else if let Some(d) = lower.strip_prefix("0d") {
        (d, 10)
    } else {
        (lower.as_str(), 10)
    };
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(&digits, radix).ok()
}

fn closer_of(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

/// Checks that `()`, `[]` and `{}` balance and nest.
fn check_brackets(tokens: &[Token]) -> Result<(), ParseError> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    for token in tokens {
        match token.tok {
            Tok::Punct(c @ ('(' | '[' | '{')) => stack.push((c, token.line)),
            Tok::Punct(c @ (')' | ']' | '}')) => match stack.pop() {
                Some((open, _)) if closer_of(open) == c => {}
                Some((open, open_line)) => {
                    return Err(ParseError::new(
                        token.line,
                        format!("`{c}` does not match `{open}` opened on line {open_line}"),
                    ));
                }
                None => {
                    return Err(ParseError::new(
                        token.line,
                        format!("`{c}` without a matching opening bracket"),
                    ));
                }
            },
            _ => {}
        }
    }
    if let Some((open, open_line)) = stack.pop() {
        return Err(ParseError::new(
            open_line,
            format!("`{open}` is never closed"),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Scanner
// ---------------------------------------------------------------------------------------------

/// A type as far as widths go.
#[derive(Debug, Clone)]
enum TypeRef {
    Bits(u32),
    Named(String),
}

struct Scanner<'a> {
    tokens: &'a [Token],
    pos: usize,
    /// Line reported for errors at end of input.
    last_line: usize,
    /// typedef / type / serializable enum name -> its type.
    types: HashMap<String, TypeRef>,
    /// const / #define name -> value (for `bit<N>` widths and table sizes).
    consts: HashMap<String, u64>,
}

/// Where a table refers to an action, for error lines.
struct ActionRef {
    table: String,
    action: String,
    line: usize,
    default: bool,
}

impl<'a> Scanner<'a> {
    fn new(tokens: &'a [Token], source: &str) -> Scanner<'a> {
        let last_line = tokens
            .last()
            .map(|t| t.line)
            .unwrap_or(1)
            .max(source.lines().count().max(1));
        Scanner {
            tokens,
            pos: 0,
            last_line,
            types: HashMap::new(),
            consts: HashMap::new(),
        }
    }

    fn tok_at(&self, pos: usize) -> Option<&'a Tok> {
        self.tokens.get(pos).map(|t| &t.tok)
    }

    fn peek(&self) -> Option<&'a Tok> {
        self.tok_at(self.pos)
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.pos)
            .map(|t| t.line)
            .unwrap_or(self.last_line)
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(w)) if w == word)
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "end of input".to_string(),
            Some(Tok::Ident(w)) => format!("`{w}`"),
            Some(Tok::Number(n)) => format!("`{n}`"),
            Some(Tok::Str) => "a string".to_string(),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        }
    }

    fn expect_punct(&mut self, c: char, context: &str) -> Result<(), ParseError> {
        if self.is_punct(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(ParseError::new(
                self.line(),
                format!("expected `{c}` {context}, found {}", self.describe()),
            ))
        }
    }

    fn expect_ident(&mut self, context: &str) -> Result<String, ParseError> {
        match self.peek() {
            Some(Tok::Ident(w)) => {
                self.pos += 1;
                Ok(w.clone())
            }
            _ => Err(ParseError::new(
                self.line(),
                format!("expected {context}, found {}", self.describe()),
            )),
        }
    }

    /// Skips a balanced group starting at an opening bracket; the position ends after its
    /// closer (or at the end of input).
    fn skip_group(&mut self) {
        let mut depth = 0usize;
        while let Some(tok) = self.peek() {
            self.pos += 1;
            match tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
            if depth == 0 {
                return;
            }
        }
    }

    /// Skips annotations: `@name`, `@name(...)`, `@name[...]`.
    fn skip_annotations(&mut self) {
        while self.is_punct('@') {
            self.pos += 1;
            if matches!(self.peek(), Some(Tok::Ident(_))) {
                self.pos += 1;
                if self.is_punct('(') || self.is_punct('[') {
                    self.skip_group();
                }
            }
        }
    }

    /// First pass: typedefs, types, serializable enums and constants, wherever they are.
    fn collect_declarations(&mut self, defines: &HashMap<String, u64>) {
        self.consts
            .extend(defines.iter().map(|(k, v)| (k.clone(), *v)));
        // Constants first, so `bit<CONST>` in a typedef resolves.
        for pos in 0..self.tokens.len() {
            if matches!(self.tok_at(pos), Some(Tok::Ident(w)) if w == "const") {
                self.pos = pos + 1;
                if self.is_ident("entries") || self.is_ident("default_action") {
                    continue;
                }
                if self.parse_type().is_err() {
                    continue;
                }
                let Some(Tok::Ident(name)) = self.peek() else {
                    continue;
                };
                self.pos += 1;
                if !self.is_punct('=') {
                    continue;
                }
                self.pos += 1;
                if let Some(Tok::Number(n)) = self.peek()
                    && self.tok_at(self.pos + 1) == Some(&Tok::Punct(';'))
                    && let Some(value) = parse_number(n)
                {
                    self.consts.insert(name.clone(), value);
                }
            }
        }
        for pos in 0..self.tokens.len() {
            let Some(Tok::Ident(word)) = self.tok_at(pos) else {
                continue;
            };
            match word.as_str() {
                "typedef" | "type" => {
                    self.pos = pos + 1;
                    if let Ok(ty) = self.parse_type()
                        && let Some(Tok::Ident(name)) = self.peek()
                        && self.tok_at(self.pos + 1) == Some(&Tok::Punct(';'))
                    {
                        self.types.insert(name.clone(), ty);
                    }
                }
                "enum" => {
                    self.pos = pos + 1;
                    if (self.is_ident("bit") || self.is_ident("int"))
                        && let Ok(ty @ TypeRef::Bits(_)) = self.parse_type()
                        && let Some(Tok::Ident(name)) = self.peek()
                    {
                        self.types.insert(name.clone(), ty);
                    }
                }
                _ => {}
            }
        }
        self.pos = 0;
    }

    /// Parses a type reference: `bit<N>`, `int<N>`, `bool`, or a name.
    fn parse_type(&mut self) -> Result<TypeRef, ParseError> {
        let line = self.line();
        let word = self.expect_ident("a type")?;
        match word.as_str() {
            "bit" | "int" => {
                self.expect_punct('<', &format!("after `{word}`"))?;
                let width = match self.peek() {
                    Some(Tok::Number(n)) => parse_number(n),
                    Some(Tok::Ident(name)) => self.consts.get(name).copied(),
                    _ => None,
                };
                let Some(width) = width.and_then(|w| u32::try_from(w).ok()) else {
                    return Err(ParseError::new(
                        line,
                        format!(
                            "cannot determine the width of `{word}<{}>`",
                            self.describe()
                        ),
                    ));
                };
                self.pos += 1;
                self.expect_punct('>', &format!("to close `{word}<{width}`"))?;
                Ok(TypeRef::Bits(width))
            }
            "bool" => Ok(TypeRef::Bits(1)),
            _ => Ok(TypeRef::Named(word)),
        }
    }

    /// Resolves a type to a bit width, following typedef chains.
    fn width_of(&self, ty: &TypeRef) -> Option<u32> {
        let mut ty = ty;
        for _ in 0..64 {
            match ty {
                TypeRef::Bits(w) => return Some(*w),
                TypeRef::Named(name) => ty = self.types.get(name)?,
            }
        }
        None
    }

    /// Second pass: every `action` and `table` declaration.
    fn scan(&mut self) -> Result<Schema, ParseError> {
        let mut schema = Schema::default();
        let mut refs = Vec::new();
        while let Some(tok) = self.peek() {
            match tok {
                Tok::Ident(w) if w == "action" => {
                    let action = self.parse_action()?;
                    if !schema.actions.contains(&action) {
                        schema.actions.push(action);
                    }
                }
                Tok::Ident(w) if w == "table" => {
                    let table = self.parse_table(&mut refs)?;
                    schema.tables.push(table);
                }
                _ => self.pos += 1,
            }
        }
        for r in refs {
            if r.action != NO_ACTION && schema.action(&r.action).is_none() {
                return Err(ParseError::new(
                    r.line,
                    format!(
                        "table `{}` refers to action `{}`, which is not declared",
                        r.table, r.action
                    ),
                ));
            }
            if r.default
                && let Some(table) = schema.table(&r.table)
                && !table.actions.contains(&r.action)
            {
                return Err(ParseError::new(
                    r.line,
                    format!(
                        "default action `{}` of table `{}` is not in its actions",
                        r.action, r.table
                    ),
                ));
            }
        }
        Ok(schema)
    }

    /// `action NAME ( PARAMS ) {` — the position ends after `{`; the body is scanned by the
    /// caller (it cannot contain declarations the schema cares about).
    fn parse_action(&mut self) -> Result<Action, ParseError> {
        self.pos += 1; // `action`
        let name = self.expect_ident("an action name after `action`")?;
        self.expect_punct('(', &format!("after action name `{name}`"))?;
        let mut params = Vec::new();
        if self.is_punct(')') {
            self.pos += 1;
        } else {
            loop {
                if let Some(param) = self.parse_param(&name)? {
                    params.push(param);
                }
                if self.is_punct(',') {
                    self.pos += 1;
                    continue;
                }
                self.expect_punct(')', &format!("after the parameters of action `{name}`"))?;
                break;
            }
        }
        self.expect_punct('{', &format!("to open the body of action `{name}`"))?;
        Ok(Action { name, params })
    }

    /// One parameter; `None` for a directional one. The position ends at `,` or `)`.
    fn parse_param(&mut self, action: &str) -> Result<Option<Param>, ParseError> {
        self.skip_annotations();
        let directional = ["in", "out", "inout"].iter().any(|d| self.is_ident(d));
        if directional {
            // Skip to the `,` or `)` that ends this parameter.
            while let Some(tok) = self.peek() {
                match tok {
                    Tok::Punct(',' | ')') => break,
                    Tok::Punct('(' | '[' | '{') => self.skip_group(),
                    _ => self.pos += 1,
                }
            }
            return Ok(None);
        }
        let line = self.line();
        let ty = self.parse_type()?;
        let name = self.expect_ident(&format!("a parameter name in action `{action}`"))?;
        let Some(bits) = self.width_of(&ty) else {
            let ty_name = match &ty {
                TypeRef::Named(n) => n.clone(),
                TypeRef::Bits(w) => format!("bit<{w}>"),
            };
            return Err(ParseError::new(
                line,
                format!(
                    "cannot determine the width of parameter `{name}` of action `{action}` \
                     (type `{ty_name}` is not bit<N>, int<N>, bool or a typedef of one in this \
                     file)"
                ),
            ));
        };
        // An optional default value: `= expr`.
        if self.is_punct('=') {
            while let Some(tok) = self.peek() {
                match tok {
                    Tok::Punct(',' | ')') => break,
                    Tok::Punct('(' | '[' | '{') => self.skip_group(),
                    _ => self.pos += 1,
                }
            }
        }
        Ok(Some(Param { name, bits }))
    }

    /// `table NAME { PROPERTIES }` — the position ends after the closing `}`.
    fn parse_table(&mut self, refs: &mut Vec<ActionRef>) -> Result<Table, ParseError> {
        self.pos += 1; // `table`
        let name = self.expect_ident("a table name after `table`")?;
        self.expect_punct('{', &format!("after table name `{name}`"))?;
        let mut table = Table {
            name,
            keys: Vec::new(),
            actions: Vec::new(),
            default_action: None,
            size: None,
        };
        loop {
            self.skip_annotations();
            if self.is_punct('}') {
                self.pos += 1;
                return Ok(table);
            }
            if self.peek().is_none() {
                return Err(ParseError::new(
                    self.line(),
                    format!("table `{}` is not closed", table.name),
                ));
            }
            if self.is_ident("const") {
                self.pos += 1;
            }
            let prop_line = self.line();
            let prop = self.expect_ident(&format!("a property in table `{}`", table.name))?;
            self.expect_punct(
                '=',
                &format!("after property `{prop}` of table `{}`", table.name),
            )?;
            match prop.as_str() {
                "key" => table.keys = self.parse_keys(&table.name)?,
                "actions" => {
                    table.actions = self.parse_action_list(&table.name, refs)?;
                }
                "default_action" => {
                    let line = self.line();
                    let action = self.parse_action_ref(&table.name)?;
                    self.skip_to_semicolon();
                    refs.push(ActionRef {
                        table: table.name.clone(),
                        action: action.clone(),
                        line,
                        default: true,
                    });
                    table.default_action = Some(action);
                }
                "size" => {
                    let value = match self.peek() {
                        Some(Tok::Number(n)) => parse_number(n),
                        Some(Tok::Ident(c)) => self.consts.get(c).copied(),
                        _ => None,
                    };
                    let Some(value) = value else {
                        return Err(ParseError::new(
                            prop_line,
                            format!(
                                "size of table `{}` is {}, not a number or known constant",
                                table.name,
                                self.describe()
                            ),
                        ));
                    };
                    self.pos += 1;
                    self.expect_punct(';', &format!("after the size of table `{}`", table.name))?;
                    table.size = Some(value);
                }
                _ => {
                    // Any other property (entries, implementation, counters, ...).
                    if self.is_punct('{') {
                        self.skip_group();
                        if self.is_punct(';') {
                            self.pos += 1;
                        }
                    } else {
                        self.skip_to_semicolon();
                    }
                }
            }
        }
    }

    /// Skips past the next `;` at this nesting level (not past a `}` that closes it).
    fn skip_to_semicolon(&mut self) {
        while let Some(tok) = self.peek() {
            match tok {
                Tok::Punct(';') => {
                    self.pos += 1;
                    return;
                }
                Tok::Punct('}') => return,
                Tok::Punct('(' | '[' | '{') => self.skip_group(),
                _ => self.pos += 1,
            }
        }
    }

    /// An action reference: optional annotations, optional leading `.`, a name, optional
    /// arguments. The position ends after the arguments.
    fn parse_action_ref(&mut self, table: &str) -> Result<String, ParseError> {
        self.skip_annotations();
        if self.is_punct('.') {
            self.pos += 1;
        }
        let name = self.expect_ident(&format!("an action name in table `{table}`"))?;
        if self.is_punct('(') {
            self.skip_group();
        }
        Ok(name)
    }

    /// `{ A; @defaultonly B(); ... }` after `actions =`.
    fn parse_action_list(
        &mut self,
        table: &str,
        refs: &mut Vec<ActionRef>,
    ) -> Result<Vec<String>, ParseError> {
        self.expect_punct('{', &format!("to open the actions of table `{table}`"))?;
        let mut actions = Vec::new();
        loop {
            self.skip_annotations();
            if self.is_punct('}') {
                self.pos += 1;
                if self.is_punct(';') {
                    self.pos += 1;
                }
                return Ok(actions);
            }
            let line = self.line();
            let name = self.parse_action_ref(table)?;
            refs.push(ActionRef {
                table: table.to_string(),
                action: name.clone(),
                line,
                default: false,
            });
            actions.push(name);
            if self.is_punct(';') {
                self.pos += 1;
            } else if !self.is_punct('}') {
                return Err(ParseError::new(
                    self.line(),
                    format!(
                        "expected `;` after an action in table `{table}`, found {}",
                        self.describe()
                    ),
                ));
            }
        }
    }

    /// `{ EXPR : KIND; ... }` after `key =`.
    fn parse_keys(&mut self, table: &str) -> Result<Vec<Key>, ParseError> {
        self.expect_punct('{', &format!("to open the key of table `{table}`"))?;
        let mut keys = Vec::new();
        loop {
            if self.is_punct('}') {
                self.pos += 1;
                if self.is_punct(';') {
                    self.pos += 1;
                }
                return Ok(keys);
            }
            if self.peek().is_none() {
                return Err(ParseError::new(
                    self.line(),
                    format!("the key of table `{table}` is not closed"),
                ));
            }
            // Collect one element: tokens up to `;` (or the closing `}`) at depth 0.
            let line = self.line();
            let start = self.pos;
            let mut depth = 0usize;
            let mut colon = None;
            while let Some(tok) = self.peek() {
                match tok {
                    Tok::Punct('(' | '[' | '{') => depth += 1,
                    Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
                    Tok::Punct('}') if depth == 0 => break,
                    Tok::Punct('}') => depth -= 1,
                    Tok::Punct(';') if depth == 0 => break,
                    Tok::Punct(':') if depth == 0 => colon = Some(self.pos),
                    _ => {}
                }
                self.pos += 1;
            }
            let end = self.pos;
            if self.is_punct(';') {
                self.pos += 1;
            }
            let Some(colon) = colon else {
                return Err(ParseError::new(
                    line,
                    format!("key element of table `{table}` has no `: match_kind`"),
                ));
            };
            let field = join_tokens(self.tokens.get(start..colon).unwrap_or_default());
            if field.is_empty() {
                return Err(ParseError::new(
                    line,
                    format!("key element of table `{table}` has no expression"),
                ));
            }
            // After the colon: the match kind, then only annotations.
            let Some(Tok::Ident(kind)) = self.tok_at(colon + 1) else {
                return Err(ParseError::new(
                    line,
                    format!("key `{field}` of table `{table}` has no match kind"),
                ));
            };
            let saved = self.pos;
            self.pos = colon + 2;
            self.skip_annotations();
            let trailing = self.pos < end;
            self.pos = saved;
            if trailing {
                return Err(ParseError::new(
                    line,
                    format!(
                        "unexpected tokens after match kind `{kind}` of key `{field}` in table \
                         `{table}`"
                    ),
                ));
            }
            keys.push(Key {
                field,
                match_kind: MatchKind::from_name(kind),
            });
        }
    }
}

/// Rebuilds an expression's text from its tokens: no spaces, except one between adjacent words.
fn join_tokens(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut prev_word = false;
    for token in tokens {
        let (text, word) = match &token.tok {
            Tok::Ident(w) => (w.as_str(), true),
            Tok::Number(n) => (n.as_str(), true),
            Tok::Str => ("\"\"", false),
            Tok::Punct(c) => {
                out.push(*c);
                prev_word = false;
                continue;
            }
        };
        if word && prev_word {
            out.push(' ');
        }
        out.push_str(text);
        prev_word = word;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(source: &str) -> Schema {
        match parse(source) {
            Ok(schema) => schema,
            Err(e) => panic!("expected the source to parse, got {e}\n{source}"),
        }
    }

    fn parse_err(source: &str) -> ParseError {
        match parse(source) {
            Ok(schema) => panic!("expected an error, got {schema:?}\n{source}"),
            Err(e) => e,
        }
    }

    // --- the embedded program -----------------------------------------------------------------

    #[test]
    fn embedded_program_parses() {
        let schema = parse(SOURCE).unwrap_or_else(|e| panic!("ironclos.p4: {e}"));
        assert_eq!(&schema, super::schema());
    }

    #[test]
    fn io_forward_table() {
        let table = schema()
            .table("io_forward")
            .expect("io_forward is declared");
        assert_eq!(
            table.keys,
            vec![Key {
                field: "standard_metadata.ingress_port".to_string(),
                match_kind: MatchKind::Exact,
            }]
        );
        assert_eq!(table.actions, vec!["forward", "drop_packet"]);
        assert_eq!(table.default_action.as_deref(), Some("drop_packet"));
        // bit<9> ports: one entry per possible ingress port.
        assert_eq!(table.size, Some(512));
    }

    #[test]
    fn forward_and_drop_actions() {
        let forward = schema().action("forward").expect("forward is declared");
        assert_eq!(
            forward.params,
            vec![Param {
                name: "port".to_string(),
                bits: 9,
            }]
        );
        let drop = schema()
            .action("drop_packet")
            .expect("drop_packet is declared");
        assert!(drop.params.is_empty());
    }

    #[test]
    fn embedded_names_check_clean() {
        assert_eq!(
            schema().check_names(&[("io_forward", &["forward", "drop_packet"])]),
            Ok(())
        );
    }

    /// Each flowlet register is declared once, as `register<bit<W>>(FLOWLET_ENTRIES) name;`,
    /// and read and written by the flowlet step.
    #[test]
    fn flowlet_registers_are_declared_and_used() {
        for name in FLOWLET_REGISTERS {
            let declared = SOURCE
                .lines()
                .filter(|l| {
                    let l = l.trim();
                    l.starts_with("register<bit<")
                        && l.ends_with(&format!("(FLOWLET_ENTRIES) {name};"))
                })
                .count();
            assert_eq!(declared, 1, "register {name}");
            assert!(SOURCE.contains(&format!("{name}.read(")), "{name} is read");
            assert!(
                SOURCE.contains(&format!("{name}.write(")),
                "{name} is written"
            );
        }
        assert!(SOURCE.contains("now - last > meta.flowlet_timeout"));
        assert_eq!(schema().check_names(FLOWLET_TABLES), Ok(()));
    }

    #[test]
    fn switch_tables_check_clean() {
        assert_eq!(schema().check_names(SWITCH_TABLES), Ok(()));
        assert_eq!(schema().check_names(SWITCH_SUPPORT_TABLES), Ok(()));
        assert_eq!(schema().check_names(QOS_TABLES), Ok(()));
    }

    /// Each listed table names exactly the actions the P4 table lists (`NoAction` aside), and
    /// the lists (with `io_forward`) cover every table of the program, each once.
    #[test]
    fn switch_tables_match_the_program_exactly() {
        let io: &[(&str, &[&str])] = &[("io_forward", &["forward", "drop_packet"])];
        let listed: Vec<(&str, &[&str])> = io
            .iter()
            .chain(SWITCH_TABLES)
            .chain(SWITCH_SUPPORT_TABLES)
            .chain(QOS_TABLES)
            .chain(FLOWLET_TABLES)
            .copied()
            .collect();
        for &(name, actions) in &listed {
            let table = schema()
                .table(name)
                .unwrap_or_else(|| panic!("{name} is declared"));
            let declared: Vec<&str> = table
                .actions
                .iter()
                .map(String::as_str)
                .filter(|a| *a != NO_ACTION)
                .collect();
            assert_eq!(declared, actions, "actions of {name}");
        }
        let mut listed_names: Vec<&str> = listed.iter().map(|(name, _)| *name).collect();
        let mut declared_names: Vec<&str> =
            schema().tables.iter().map(|t| t.name.as_str()).collect();
        listed_names.sort_unstable();
        declared_names.sort_unstable();
        assert_eq!(listed_names, declared_names);
        assert!(
            listed_names.windows(2).all(|w| w[0] != w[1]),
            "{listed_names:?}"
        );
    }

    fn keys(table: &str) -> Vec<(String, MatchKind)> {
        schema()
            .table(table)
            .unwrap_or_else(|| panic!("{table} is declared"))
            .keys
            .iter()
            .map(|k| (k.field.clone(), k.match_kind.clone()))
            .collect()
    }

    fn key_list(keys: &[(&str, MatchKind)]) -> Vec<(String, MatchKind)> {
        keys.iter()
            .map(|(field, kind)| (field.to_string(), kind.clone()))
            .collect()
    }

    #[test]
    fn switch_table_keys() {
        use MatchKind::{Exact, Lpm, Selector, Ternary};
        let port = "standard_metadata.ingress_port";
        assert_eq!(keys("port_vlan"), key_list(&[(port, Exact)]));
        assert_eq!(
            keys("vlan_membership"),
            key_list(&[(port, Exact), ("meta.vid", Exact)])
        );
        assert_eq!(
            keys("mac_table"),
            key_list(&[("meta.vid", Exact), ("hdr.ethernet.dst_addr", Exact)])
        );
        assert_eq!(
            keys("mac_learn"),
            key_list(&[("meta.vid", Exact), ("hdr.ethernet.src_addr", Exact)])
        );
        assert_eq!(
            keys("router_mac"),
            key_list(&[
                ("meta.vid", Exact),
                ("meta.port_interface", Exact),
                ("hdr.ethernet.dst_addr", Ternary),
            ])
        );
        assert_eq!(
            keys("ipv4_lpm"),
            key_list(&[("meta.vrf", Exact), ("meta.lookup_ipv4", Lpm)])
        );
        assert_eq!(
            keys("ipv6_lpm"),
            key_list(&[("meta.vrf", Exact), ("meta.lookup_ipv6", Lpm)])
        );
        assert_eq!(
            keys("ecmp_group"),
            key_list(&[
                ("meta.ecmp_group_id", Exact),
                ("meta.flow_src", Selector),
                ("meta.flow_dst", Selector),
                ("meta.flow_protocol", Selector),
                ("meta.flow_src_port", Selector),
                ("meta.flow_dst_port", Selector),
                ("meta.flow_label", Selector),
                ("meta.flowlet_id", Selector),
            ])
        );
        assert_eq!(
            keys("ecmp_balance"),
            key_list(&[("meta.ecmp_group_id", Exact)])
        );
        assert!(
            SOURCE
                .contains("implementation = action_selector(HashAlgorithm.crc32, 32w1024, 32w16);")
        );
        assert_eq!(keys("nexthop"), key_list(&[("meta.nexthop_id", Exact)]));
        assert_eq!(
            keys("l3_interface"),
            key_list(&[("meta.l3_interface", Exact)])
        );
        assert_eq!(
            keys("egress_vlan"),
            key_list(&[
                ("standard_metadata.egress_port", Exact),
                ("meta.vid", Exact)
            ])
        );
    }

    #[test]
    fn switch_default_actions() {
        let default = |table: &str| {
            schema()
                .table(table)
                .unwrap_or_else(|| panic!("{table} is declared"))
                .default_action
                .clone()
        };
        let expected: &[(&str, Option<&str>)] = &[
            ("port_vlan", Some(NO_ACTION)),
            ("vlan_membership", Some("drop_packet")),
            ("mac_table", Some("flood")),
            ("mac_learn", Some("learn_mac")),
            ("router_mac", Some(NO_ACTION)),
            ("ipv4_lpm", Some("drop_packet")),
            ("ipv6_lpm", Some("drop_packet")),
            // BMv2 ignores default_action on tables with an action selector.
            ("ecmp_group", None),
            ("ecmp_balance", Some("balance_hash")),
            ("nexthop", Some("resolve_nexthop")),
            ("my_sid", Some(NO_ACTION)),
            ("srv6_policy", Some("drop_packet")),
            ("l3_interface", Some("set_vrf")),
            ("egress_vlan", Some("egress_untagged")),
        ];
        for &(table, action) in expected {
            assert_eq!(default(table).as_deref(), action, "default of {table}");
        }
    }

    #[test]
    fn switch_action_parameters() {
        let expected: &[(&str, &[(&str, u32)])] = &[
            ("set_access_vlan", &[("vid", 12)]),
            ("set_trunk", &[]),
            ("set_routed_interface", &[("interface", 16)]),
            ("allow_vlan", &[]),
            ("set_native_vlan", &[("vid", 12)]),
            ("mac_known", &[]),
            ("learn_mac", &[]),
            ("l2_forward", &[("port", 9)]),
            ("flood", &[]),
            ("route_packet", &[("interface", 16)]),
            ("set_vrf", &[("vrf", 16)]),
            ("set_nexthop", &[("nexthop", 32)]),
            ("set_ecmp_group", &[("group", 32)]),
            ("glean", &[("interface", 16)]),
            ("punt_local", &[]),
            ("blackhole", &[]),
            ("rewrite_to_port", &[("port", 9), ("dst_mac", 48)]),
            ("rewrite_to_vlan", &[("vid", 12), ("dst_mac", 48)]),
            ("resolve_nexthop", &[]),
            ("egress_tagged", &[]),
            ("egress_untagged", &[]),
            ("punt_to_cpu", &[]),
            ("drop_with_reason", &[("reason", 8)]),
            ("set_srv6_policy", &[("policy", 32)]),
            ("end", &[("psp", 1), ("usp", 1)]),
            (
                "un",
                &[
                    ("psp", 1),
                    ("usp", 1),
                    ("block_mask", 128),
                    ("argument_mask", 128),
                    ("shift", 8),
                ],
            ),
            ("end_dt46", &[("vrf", 16)]),
            ("balance_hash", &[]),
            (
                "balance_flowlet",
                &[("timeout", 48), ("base", 32), ("mask", 32)],
            ),
            ("balance_per_packet", &[]),
            ("flowlet_step", &[]),
        ];
        for &(name, params) in expected {
            let action = schema()
                .action(name)
                .unwrap_or_else(|| panic!("{name} is declared"));
            let got: Vec<(&str, u32)> = action
                .params
                .iter()
                .map(|p| (p.name.as_str(), p.bits))
                .collect();
            assert_eq!(got, params, "parameters of {name}");
        }
    }

    /// The headers the brief requires are declared, and some parser state extracts each.
    #[test]
    fn headers_are_declared_and_extracted() {
        let tokens = lex(SOURCE).expect("lexes").tokens;
        let ident = |i: usize| match tokens.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(w)) => Some(w.as_str()),
            _ => None,
        };
        let punct = |i: usize, c: char| tokens.get(i).map(|t| &t.tok) == Some(&Tok::Punct(c));

        // `header NAME {` declarations.
        let mut headers = Vec::new();
        for i in 0..tokens.len() {
            if ident(i) == Some("header")
                && let Some(name) = ident(i + 1)
                && punct(i + 2, '{')
            {
                headers.push(name);
            }
        }
        // Struct fields whose type is a header: field name -> header type.
        let mut field_type = HashMap::new();
        for i in 0..tokens.len() {
            if let (Some(ty), Some(field)) = (ident(i), ident(i + 1))
                && headers.contains(&ty)
                && punct(i + 2, ';')
            {
                field_type.insert(field, ty);
            }
        }
        // `state NAME { ... extract(hdr.FIELD ... }`: header types extracted by some state.
        let mut extracted = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            if ident(i) == Some("state") && punct(i + 2, '{') {
                let mut j = i + 3;
                while j < tokens.len() && !punct(j, '}') {
                    if ident(j) == Some("extract")
                        && punct(j + 1, '(')
                        && ident(j + 2) == Some("hdr")
                        && punct(j + 3, '.')
                        && let Some(ty) = ident(j + 4).and_then(|f| field_type.get(f))
                    {
                        extracted.push(*ty);
                    }
                    j += 1;
                }
                i = j;
            }
            i += 1;
        }
        for wanted in [
            "ethernet_t",
            "vlan_tag_t",
            "arp_t",
            "ipv4_t",
            "ipv4_options_t",
            "ipv6_t",
            "icmpv6_t",
            "ndp_t",
            "udp_t",
            "tcp_t",
        ] {
            assert!(headers.contains(&wanted), "header {wanted} is not declared");
            assert!(
                extracted.contains(&wanted),
                "no parser state extracts a {wanted}"
            );
        }
        // Two VLAN tags, with both TPIDs.
        assert_eq!(
            extracted.iter().filter(|t| **t == "vlan_tag_t").count(),
            2,
            "outer and inner tag"
        );
        assert!(SOURCE.contains("= 0x8100;") && SOURCE.contains("= 0x88a8;"));

        // ARP after Ethernet and after either tag; ICMPv6 after IPv6; the ND body (with the
        // target address) only after a Neighbor Solicitation or Advertisement.
        assert!(SOURCE.contains("ETHERTYPE_ARP  = 0x0806;"));
        assert!(SOURCE.contains("IP_PROTO_ICMPV6 = 58;"));
        assert!(SOURCE.contains("ICMPV6_NEIGHBOR_SOLICIT = 135;"));
        assert!(SOURCE.contains("ICMPV6_NEIGHBOR_ADVERT  = 136;"));
        let transitions = |to: &str| {
            let mut from = Vec::new();
            let mut state = None;
            for i in 0..tokens.len() {
                if ident(i) == Some("state") {
                    state = ident(i + 1);
                }
                if let (Some(state), Some(label)) = (state, ident(i))
                    && punct(i + 1, ':')
                    && ident(i + 2) == Some(to)
                {
                    from.push((state, label));
                }
            }
            from
        };
        assert_eq!(
            transitions("parse_arp"),
            vec![
                ("parse_ethernet", "ETHERTYPE_ARP"),
                ("parse_vlan_outer", "ETHERTYPE_ARP"),
                ("parse_vlan_inner", "ETHERTYPE_ARP"),
            ]
        );
        assert_eq!(
            transitions("parse_icmpv6"),
            vec![("parse_ipv6", "IP_PROTO_ICMPV6")]
        );
        assert_eq!(
            transitions("parse_ndp"),
            vec![
                ("parse_icmpv6", "ICMPV6_NEIGHBOR_SOLICIT"),
                ("parse_icmpv6", "ICMPV6_NEIGHBOR_ADVERT"),
            ]
        );
        // The deparser writes them back, in wire order.
        let emitted: Vec<&str> = (0..tokens.len())
            .filter(|&i| {
                ident(i) == Some("emit") && punct(i + 1, '(') && ident(i + 2) == Some("hdr")
            })
            .filter_map(|i| ident(i + 4))
            .collect();
        assert_eq!(
            emitted,
            vec![
                "packet_in",
                "ethernet",
                "vlan_outer",
                "vlan_inner",
                "arp",
                "encap_ipv6",
                "encap_srh",
                "encap_segments",
                "ipv4",
                "ipv4_options",
                "ipv6",
                "srh",
                "srh_segments",
                "srh_tlvs",
                "inner_ipv4",
                "inner_ipv6",
                "icmpv6",
                "ndp",
                "udp",
                "tcp",
            ]
        );
    }

    #[test]
    fn prefixes_of_the_embedded_program_are_handled() {
        // Every prefix would be quadratic in the program's size: take those that end at a line
        // start and, within lines, every 41st character.
        let mut ok = 0usize;
        let mut previous = '\n';
        for (end, c) in SOURCE.char_indices() {
            let at_line_start = previous == '\n';
            previous = c;
            if !at_line_start && end % 41 != 0 {
                continue;
            }
            let prefix = &SOURCE[..end];
            match parse(prefix) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(e.line >= 1, "line numbers are 1-based: {e}");
                    assert!(e.line <= prefix.lines().count().max(1), "{e}");
                }
            }
        }
        // Prefixes that end between top-level declarations parse.
        assert!(ok > 0);
        assert!(parse(SOURCE).is_ok());
    }

    #[test]
    fn mutated_programs_never_panic() {
        // A small deterministic fuzzer: delete, duplicate or replace bytes of the program.
        let bytes = SOURCE.as_bytes();
        let alphabet = b"{}()[]<>;:=,.@#/*\"\n actiontable0x9";
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..300 {
            let mut buf = bytes.to_vec();
            for _ in 0..(1 + next() % 4) {
                if buf.is_empty() {
                    break;
                }
                let at = (next() % buf.len() as u64) as usize;
                let c = alphabet[(next() % alphabet.len() as u64) as usize];
                match next() % 3 {
                    0 => {
                        buf.remove(at);
                    }
                    1 => buf.insert(at, c),
                    _ => buf[at] = c,
                }
            }
            let text = String::from_utf8_lossy(&buf);
            if let Err(e) = parse(&text) {
                assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{e}");
            }
        }
    }

    // --- check_names -----------------------------------------------------------------------------

    const SMALL: &str = "
        control C(inout standard_metadata_t sm) {
            action set_port(bit<9> port) { sm.egress_spec = port; }
            action drop() { mark_to_drop(sm); }
            action unused() { }
            table t1 {
                key = { sm.ingress_port : exact; }
                actions = { set_port; drop; NoAction; }
                default_action = NoAction();
            }
            apply { t1.apply(); }
        }
    ";

    #[test]
    fn check_names_accepts_matching_names() {
        let schema = parse_ok(SMALL);
        assert_eq!(
            schema.check_names(&[("t1", &["set_port", "drop", "NoAction"])]),
            Ok(())
        );
        // Using a subset is fine.
        assert_eq!(schema.check_names(&[("t1", &["drop"])]), Ok(()));
        assert_eq!(schema.check_names(&[]), Ok(()));
    }

    #[test]
    fn check_names_reports_missing_table() {
        let schema = parse_ok(SMALL);
        assert_eq!(
            schema.check_names(&[("t2", &[])]),
            Err(vec![
                "table `t2` is not declared in the P4 program".to_string()
            ])
        );
    }

    #[test]
    fn check_names_reports_missing_action() {
        let schema = parse_ok(SMALL);
        let errors = schema
            .check_names(&[("t1", &["set_port", "flood"])])
            .expect_err("flood is not declared");
        // `flood` is neither declared nor listed in t1: two problems, both about `flood`.
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("`flood`") && errors[0].contains("not declared"));
        assert!(errors[1].contains("`flood`") && errors[1].contains("not listed"));
    }

    #[test]
    fn check_names_reports_action_not_in_table() {
        let schema = parse_ok(SMALL);
        assert_eq!(
            schema.check_names(&[("t1", &["unused"])]),
            Err(vec![
                "action `unused` is not listed in the actions of P4 table `t1` (it lists: \
                 set_port, drop, NoAction)"
                    .to_string()
            ])
        );
    }

    #[test]
    fn check_names_reports_every_mismatch() {
        let schema = parse_ok(SMALL);
        let errors = schema
            .check_names(&[
                ("t1", &["drop", "unused"]),
                ("nope", &["set_port", "ghost"]),
            ])
            .expect_err("three kinds of mismatch");
        // unused: not listed in t1; nope: missing; ghost: not declared (nope has no list).
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("`unused`") && errors[0].contains("not listed"));
        assert!(errors[1].contains("`nope`") && errors[1].contains("table"));
        assert!(errors[2].contains("`ghost`") && errors[2].contains("not declared"));
    }

    // --- the scanner -----------------------------------------------------------------------------

    #[test]
    fn ignores_declarations_in_comments_and_strings() {
        let schema = parse_ok(
            r#"
            // table commented_line { key = { a : exact; } actions = { x; } }
            /* action commented_block(bit<8> v) { }
               table also_commented { actions = { y; } } */
            @name("table in_string { }") action real(bit<4> v /* , bit<3> w */) { }
            table real_table {
                actions = { real; } // action trailing() { }
            }
            "#,
        );
        let actions: Vec<&str> = schema.actions.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(actions, vec!["real"]);
        assert_eq!(
            schema.action("real").map(|a| a.params.clone()),
            Some(vec![Param {
                name: "v".to_string(),
                bits: 4
            }])
        );
        let tables: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tables, vec!["real_table"]);
    }

    #[test]
    fn full_table_syntax() {
        let schema = parse_ok(
            r#"
            #define TBL_SIZE 0x400
            typedef bit<32> addr_t;
            typedef addr_t alias_t;
            const bit<32> WIDE = 128;
            enum bit<2> color_t { RED = 0, GREEN = 1 }
            control C(inout H hdr, inout standard_metadata_t sm) {
                @name(".NoAction") action noop() { }
                action set(in bit<8> dp, alias_t a, bool flag, int<16> delta, color_t c,
                           bit<WIDE> big) { }
                action hit() { }
                @name("C.t") table t {
                    key = {
                        hdr.ipv4.dst_addr : lpm @name("dst");
                        hdr.ipv4.src_addr[15:0] : ternary;
                        hdr.tcp.dst_port: range;
                        hdr.vlan.isValid() : optional;
                        (bit<16>) hdr.x : selector;
                        meta.y : my_kind;
                    }
                    actions = { set; @defaultonly .noop(); @tableonly hit(); }
                    const default_action = noop();
                    implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
                    const entries = { (1, 2, 3, true, 4, 5) : hit(); }
                    counters = direct;
                    size = TBL_SIZE;
                }
                table no_key {
                    actions = { hit }
                    size = 16w64;
                }
                apply { t.apply(); }
            }
            "#,
        );
        let set = schema.action("set").expect("set");
        let params: Vec<(&str, u32)> = set
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.bits))
            .collect();
        // `dp` has a direction and is not a control-plane parameter.
        assert_eq!(
            params,
            vec![
                ("a", 32),
                ("flag", 1),
                ("delta", 16),
                ("c", 2),
                ("big", 128)
            ]
        );
        let t = schema.table("t").expect("t");
        let keys: Vec<(&str, MatchKind)> = t
            .keys
            .iter()
            .map(|k| (k.field.as_str(), k.match_kind.clone()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("hdr.ipv4.dst_addr", MatchKind::Lpm),
                ("hdr.ipv4.src_addr[15:0]", MatchKind::Ternary),
                ("hdr.tcp.dst_port", MatchKind::Range),
                ("hdr.vlan.isValid()", MatchKind::Optional),
                ("(bit<16>)hdr.x", MatchKind::Selector),
                ("meta.y", MatchKind::Other("my_kind".to_string())),
            ]
        );
        assert_eq!(t.actions, vec!["set", "noop", "hit"]);
        assert_eq!(t.default_action.as_deref(), Some("noop"));
        assert_eq!(t.size, Some(1024));
        let no_key = schema.table("no_key").expect("no_key");
        assert!(no_key.keys.is_empty());
        assert_eq!(no_key.actions, vec!["hit"]);
        assert_eq!(no_key.default_action, None);
        assert_eq!(no_key.size, Some(64));
    }

    #[test]
    fn no_action_is_built_in() {
        let schema = parse_ok(
            "control C() { table t { actions = { NoAction; } default_action = NoAction(); } apply {} }",
        );
        let t = schema.table("t").expect("t");
        assert_eq!(t.actions, vec!["NoAction"]);
        assert_eq!(t.default_action.as_deref(), Some("NoAction"));
        assert!(schema.action("NoAction").is_none());
        assert_eq!(schema.check_names(&[("t", &["NoAction"])]), Ok(()));
    }

    #[test]
    fn undeclared_action_references_are_errors() {
        let e = parse_err("control C() {\n table t {\n actions = { ghost; }\n }\n apply {} }");
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("ghost"), "{e}");

        let e = parse_err(
            "action a() { }\naction b() { }\ntable t {\n actions = { a; }\n default_action = b();\n}",
        );
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("`b`"), "{e}");
    }

    #[test]
    fn malformed_input_gives_line_numbers() {
        let cases: &[(&str, usize)] = &[
            // Unterminated braces: reported where the brace opens.
            ("control C() {\n  apply {\n", 2),
            ("action a() {\n}\ntable t {\n  actions = { a; }\n", 3),
            ("x = (1 + 2]\n", 1),
            ("\n\n}\n", 3),
            // A keyword with nothing after it.
            ("action a() { }\n\ntable", 3),
            ("action", 1),
            ("table t", 1),
            ("table t {", 1),
            // Malformed declarations.
            ("action 5() { }", 1),
            ("action a(bit<9> ) { }", 1),
            ("action a(bit<x> p) { }", 1),
            ("action a(unknown_t p) { }", 1),
            ("action a(bit<9> p)\n;", 2),
            ("table t {\n key = { a.b; }\n}", 2),
            ("table t {\n key = { a.b : ; }\n}", 2),
            ("table t {\n key = { : exact; }\n}", 2),
            ("table t {\n key = { a : exact b; }\n}", 2),
            ("table t {\n size = many;\n}", 2),
            ("table t {\n 42 = 1;\n}", 2),
            ("table t {\n actions = a;\n}", 2),
            // Lexical garbage.
            ("/* never closed\n\n", 1),
            ("\n\"never closed", 2),
            ("ok\n$$$ `x`", 2),
            ("a\nb\nhé", 3),
            ("\u{0}", 1),
        ];
        for &(source, line) in cases {
            let e = parse_err(source);
            assert_eq!(e.line, line, "source {source:?}: {e}");
            assert!(!e.message.is_empty());
            assert_eq!(e.to_string(), format!("line {line}: {}", e.message));
        }
    }

    #[test]
    fn empty_and_declaration_free_sources_parse_to_nothing() {
        for source in [
            "",
            "   \n",
            "// only a comment",
            "#include <core.p4>\n",
            "const bit<8> X = 1;",
        ] {
            assert_eq!(parse_ok(source), Schema::default(), "{source:?}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("512"), Some(512));
        assert_eq!(parse_number("0x200"), Some(512));
        assert_eq!(parse_number("0X2_00"), Some(512));
        assert_eq!(parse_number("16w0x800"), Some(0x800));
        assert_eq!(parse_number("8s5"), Some(5));
        assert_eq!(parse_number("0b101"), Some(5));
        assert_eq!(parse_number("0o17"), Some(15));
        assert_eq!(parse_number("0d99"), Some(99));
        assert_eq!(parse_number("0x"), None);
        assert_eq!(parse_number("99999999999999999999999"), None);
        assert_eq!(parse_number("12abc"), None);
    }

    #[test]
    fn match_kind_names_round_trip() {
        for name in [
            "exact", "lpm", "ternary", "range", "optional", "selector", "custom",
        ] {
            assert_eq!(MatchKind::from_name(name).as_str(), name);
            assert_eq!(MatchKind::from_name(name).to_string(), name);
        }
        assert_eq!(MatchKind::from_name("lpm"), MatchKind::Lpm);
    }
}
