//! Benchmark of `tool_search`'s index: 2,000 tools with generated MCP-style names,
//! descriptions and parameters; the time to build the index, then 1,000 varied queries
//! (keywords, exact names, camelCase, misses, long text), mean and p99 per query.
//!
//! `cargo run --release -p toolbelt-agent --example tool_search_bench [tools] [queries]`
//! (or `bash bench/tool_search.sh`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_agent::ToolIndex;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult,
};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};

struct GeneratedTool {
    name: String,
    description: String,
    schema: Value,
}

impl Tool for GeneratedTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn display_name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, _args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(Never))
    }
}

struct Never;

impl Invocation for Never {
    fn describe(&self) -> String {
        String::new()
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async { ToolResult::text("") })
    }
}

const SERVERS: &[&str] = &[
    "github",
    "gitlab",
    "jira",
    "slack",
    "linear",
    "notion",
    "postgres",
    "sentry",
    "stripe",
    "gdrive",
    "figma",
    "datadog",
    "aws",
    "kubernetes",
    "salesforce",
    "zendesk",
    "hubspot",
    "confluence",
    "asana",
    "trello",
];
const VERBS: &[&str] = &[
    "create", "get", "list", "update", "delete", "search", "archive", "assign", "export", "import",
    "sync", "merge", "close", "open", "watch",
];
const OBJECTS: &[&str] = &[
    "issue",
    "pullRequest",
    "comment",
    "file",
    "user",
    "project",
    "channel",
    "message",
    "invoice",
    "customer",
    "dashboard",
    "alert",
    "bucket",
    "pod",
    "deployment",
    "ticket",
    "page",
    "task",
    "board",
    "label",
    "release",
    "branch",
    "table",
    "query",
    "webhook",
];
const PARAMS: &[&str] = &[
    "id",
    "title",
    "body",
    "owner",
    "repo",
    "path",
    "content",
    "email",
    "limit",
    "cursor",
    "query",
    "labels",
    "assignee",
    "channel_id",
    "due_date",
    "amount",
    "currency",
    "namespace",
    "region",
    "status",
];

/// A small deterministic generator (xorshift), so every run sees the same tools.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as usize
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.next() % from.len()]
    }
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_uppercase() {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

fn registry(n: usize, rng: &mut Rng) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    let mut i = 0;
    while registry.len() < n {
        let server = SERVERS[i % SERVERS.len()];
        let verb = rng.pick(VERBS);
        let object = rng.pick(OBJECTS);
        // Some servers use camelCase tool names, most snake_case.
        let own = if i % 5 == 0 {
            let mut o = object.to_string();
            o[..1].make_ascii_uppercase();
            format!("{verb}{o}")
        } else {
            format!("{verb}_{}", snake(object))
        };
        let name = format!("mcp__{server}__{own}_{}", i / 1000);
        i += 1;
        let params: Vec<&str> = (0..2 + rng.next() % 5).map(|_| rng.pick(PARAMS)).collect();
        let properties: serde_json::Map<String, Value> = params
            .iter()
            .map(|p| {
                (
                    p.to_string(),
                    json!({"type": "string", "description": format!("The {} of the {object}.", p.replace('_', " "))}),
                )
            })
            .collect();
        let description = format!(
            "{} a {} in {server}. Use it when the person asks to {verb} {}s in their {server} workspace; it needs the server's credentials and fails when the {} does not exist. Returns the {} as JSON.",
            capitalise(verb),
            snake(object).replace('_', " "),
            snake(object).replace('_', " "),
            snake(object).replace('_', " "),
            snake(object).replace('_', " "),
        );
        registry.register(
            Arc::new(GeneratedTool {
                name,
                description,
                schema: json!({"type": "object", "properties": properties}),
            }),
            Origin::Mcp {
                server: server.to_string(),
            },
        );
    }
    registry
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn queries(n: usize, registry: &ToolRegistry, rng: &mut Rng) -> Vec<String> {
    let names: Vec<&str> = registry.all().map(|r| r.name.as_str()).collect();
    (0..n)
        .map(|i| match i % 8 {
            0 => names[rng.next() % names.len()].to_string(),
            1 => format!("{} {}", rng.pick(VERBS), snake(rng.pick(OBJECTS))),
            2 => format!(
                "{} a {} in {}",
                rng.pick(VERBS),
                snake(rng.pick(OBJECTS)),
                rng.pick(SERVERS)
            ),
            3 => format!("{}{}", rng.pick(VERBS), capitalise(rng.pick(OBJECTS))),
            4 => format!("{} {}", rng.pick(PARAMS), rng.pick(PARAMS)),
            5 => "frobnicate the quantum zebra".to_string(),
            6 => format!(
                "I need to {} the {} for the {} and then {} it, with the {} and {} set",
                rng.pick(VERBS),
                snake(rng.pick(OBJECTS)),
                rng.pick(SERVERS),
                rng.pick(VERBS),
                rng.pick(PARAMS),
                rng.pick(PARAMS)
            ),
            _ => format!("{} issues", rng.pick(SERVERS)),
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tools: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let registry = registry(tools, &mut rng);

    let builds = 10;
    let started = Instant::now();
    let mut index = ToolIndex::from_registry(&registry);
    for _ in 1..builds {
        index = ToolIndex::from_registry(&registry);
    }
    let build = started.elapsed() / builds;
    println!("tools indexed: {}", index.len());
    println!("index build: {:.2} ms (mean of {builds})", ms(build));

    let queries = queries(count, &registry, &mut rng);
    let mut times = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    let mut exact_first = 0usize;
    let mut exact = 0usize;
    for q in &queries {
        let started = Instant::now();
        let found = index.search(q, 5);
        times.push(started.elapsed());
        if let Ok(found) = found {
            hits += usize::from(!found.is_empty());
            if registry.get(q).is_some() {
                exact += 1;
                exact_first += usize::from(found.first().is_some_and(|t| &t.name == q));
            }
        }
    }
    times.sort();
    let total: Duration = times.iter().sum();
    let mean = total / times.len().max(1) as u32;
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    let max = times[times.len() - 1];
    println!(
        "queries: {} ({hits} with results; exact names first: {exact_first}/{exact})",
        times.len()
    );
    println!(
        "per query: mean {:.1} µs, p99 {:.1} µs, max {:.1} µs (target < 1 ms)",
        us(mean),
        us(p99),
        us(max)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
