#![allow(clippy::too_many_lines)]
//! The `lsp` tool against typescript-language-server (with typescript, both installed by
//! `scripts/setup.sh` into `.cache/lsp`): the operations pyright does not offer
//! (goToImplementation) and the ones every server has, on a project the test writes,
//! each test on a cold server whose first answer must already see the whole project.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Workspace, lsp_json, npm_server, ok};
use serde_json::json;

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

/// The project the tests write, and the tool over a cold typescript-language-server.
fn project() -> Option<(Workspace, toolbelt_lsp::LspTool, Arc<toolbelt_lsp::Servers>)> {
    let bin = npm_server("typescript-language-server")?;
    let ws = Workspace::new();
    ws.write("shapes.ts", SHAPES);
    ws.write("main.ts", MAIN);
    ws.write(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020"}}"#,
    );
    let (tool, servers) = ws.tool(&lsp_json(
        "typescript",
        &bin,
        &["--stdio"],
        &[(".ts", "typescript")],
    ));
    Some((ws, tool, servers))
}

/// A cold server answers from the open file alone while tsserver loads the project
/// (typescript-language-server routes the question to its syntax server then): the
/// first answer waits for the project, so it names the references in main.ts too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_answer_of_a_cold_server_sees_the_whole_project() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    let refs = ok(
        &ws,
        &tool,
        json!({"operation": "findReferences", "filePath": "shapes.ts", "line": 5, "character": 14}),
    )
    .await;
    assert!(refs.contains("3 references:"), "{refs}");
    assert!(
        refs.contains("shapes.ts:5:14: export class Square implements Shape {"),
        "{refs}"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implementations_definitions_hover_and_diagnostics() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    // The interface's implementations across the project, on the first answer.
    let imps = ok(&ws, &tool, json!({"operation": "goToImplementation", "filePath": "shapes.ts", "line": 1, "character": 18})).await;
    assert!(
        imps.contains("shapes.ts:5:14: export class Square implements Shape {"),
        "{imps}"
    );
    assert!(
        imps.contains("shapes.ts:12:14: export class Circle implements Shape {"),
        "{imps}"
    );
    assert!(imps.contains("main.ts:3:25"), "{imps}");

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
    servers.shutdown().await;
}

/// `workspaceSymbol` as the first question: tsserver has no project before a file of it
/// is open ("No Project"), so one is opened first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_workspace_symbol_of_a_fresh_server_finds_the_class() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    let found = ok(
        &ws,
        &tool,
        json!({"operation": "workspaceSymbol", "query": "Square"}),
    )
    .await;
    assert!(found.contains("Class Square — shapes.ts:5:1"), "{found}");
    servers.shutdown().await;
}
