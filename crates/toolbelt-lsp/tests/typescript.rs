#![allow(clippy::too_many_lines)]
//! The `lsp` tool against typescript-language-server (with typescript, both installed by
//! `scripts/setup.sh` into `.cache/lsp`): the operations pyright does not offer
//! (goToImplementation) and the ones every server has, on a project the test writes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{Workspace, call};
use serde_json::{Value, json};

const SHAPES: &str = "\
export interface Shape {
  area(): number;
}

export class Square implements Shape {
  constructor(private side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

export class Circle implements Shape {
  constructor(private r: number) {}
  area(): number {
    return 3.14 * this.r * this.r;
  }
}
";

const MAIN: &str = "\
import { Shape, Square } from './shapes';

const shapes: Shape[] = [new Square(2)];
const total: number = shapes.reduce((sum, s) => sum + s.area(), 0);
const wrong: string = total;
";

fn server() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.cache/lsp/node_modules/.bin/typescript-language-server");
    if bin.is_file() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "typescript-language-server is missing: run scripts/setup.sh (it installs {})",
        bin.display()
    );
    eprintln!("skipped: typescript-language-server is not installed (run scripts/setup.sh)");
    None
}

async fn ok(ws: &Workspace, tool: &toolbelt_lsp::LspTool, args: Value) -> String {
    let result = call(tool, ws, args.clone()).await;
    let text = result.llm_text();
    assert!(!result.is_error(), "{args}: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implementations_definitions_references_and_diagnostics() {
    let Some(bin) = server() else { return };
    let ws = Workspace::new();
    ws.write("shapes.ts", SHAPES);
    ws.write("main.ts", MAIN);
    ws.write(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020"}}"#,
    );
    let lsp_json = json!({"typescript": {
        "command": bin, "args": ["--stdio"],
        "extensionToLanguage": {".ts": "typescript"},
        "startupTimeout": 30000
    }});
    let (tool, servers) = ws.tool(&lsp_json.to_string());

    let imps = ok(&ws, &tool, json!({"operation": "goToImplementation", "filePath": "shapes.ts", "line": 1, "character": 18})).await;
    assert!(imps.contains("2 implementations:"), "{imps}");
    assert!(
        imps.contains("shapes.ts:5:14: export class Square implements Shape {"),
        "{imps}"
    );
    assert!(
        imps.contains("shapes.ts:12:14: export class Circle implements Shape {"),
        "{imps}"
    );

    // Diagnostics first: tsserver publishes them once it has loaded the project; before
    // that it answers questions about main.ts from the file alone (no definition).
    let diags = ok(
        &ws,
        &tool,
        json!({"operation": "diagnostics", "filePath": "main.ts"}),
    )
    .await;
    assert!(
        diags.contains("main.ts:5:7: const wrong: string = total;"),
        "{diags}"
    );
    assert!(
        diags
            .contains("error: Type 'number' is not assignable to type 'string'. (typescript 2322)"),
        "{diags}"
    );
    let hover = ok(
        &ws,
        &tool,
        json!({"operation": "hover", "filePath": "main.ts", "line": 4, "character": 57}),
    )
    .await;
    assert!(hover.contains("(method) Shape.area(): number"), "{hover}");
    let def = ok(
        &ws,
        &tool,
        json!({"operation": "goToDefinition", "filePath": "main.ts", "line": 4, "character": 57}),
    )
    .await;
    assert!(def.contains("shapes.ts:2:3: area(): number;"), "{def}");

    let refs = ok(
        &ws,
        &tool,
        json!({"operation": "findReferences", "filePath": "shapes.ts", "line": 5, "character": 14}),
    )
    .await;
    assert!(
        refs.contains("main.ts:1:17: import { Shape, Square } from './shapes';"),
        "{refs}"
    );
    assert!(
        refs.contains("main.ts:3:30: const shapes: Shape[] = [new Square(2)];"),
        "{refs}"
    );

    servers.shutdown().await;
}
