#![allow(clippy::too_many_lines)]
//! Every operation of the `lsp` tool against pyright (installed by `scripts/setup.sh`
//! into `.cache/lsp`) on a small Python project the test writes. One server serves all
//! the calls of a test, as in a session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Workspace, call, lsp_json, ok, pyright};
use serde_json::{Value, json};

const MODELS: &str = "\
class Shape:
    def area(self) -> float:
        raise NotImplementedError


class Square(Shape):
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side * self.side


def total_area(shapes: list[Shape]) -> float:
    \"\"\"The sum of the areas.\"\"\"
    return sum(s.area() for s in shapes)
";

const MAIN: &str = "\
from models import Square, total_area

label = \"é😀\"; sq = Square(2.0)
print(total_area([sq]))
count: int = \"three\"
";

fn project() -> Option<(
    Workspace,
    toolbelt_lsp::LspTool,
    std::sync::Arc<toolbelt_lsp::Servers>,
)> {
    let bin = pyright()?;
    let ws = Workspace::new();
    ws.write("models.py", MODELS);
    ws.write("main.py", MAIN);
    let (tool, servers) = ws.tool(&lsp_json(
        "python",
        &bin,
        &["--stdio"],
        &[(".py", "python")],
    ));
    Some((ws, tool, servers))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_hover_and_symbols() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    // `Square` on line 3, after a string with a character outside the BMP: the column
    // is in characters (20), the server's in UTF-16 units (21, 1-based).
    let def = ok(
        &ws,
        &tool,
        json!({"operation": "goToDefinition", "filePath": "main.py", "line": 3, "character": 20}),
    )
    .await;
    assert!(def.contains("models.py:6:7: class Square(Shape):"), "{def}");

    let refs = ok(
        &ws,
        &tool,
        json!({"operation": "findReferences", "filePath": "models.py", "line": 14, "character": 5}),
    )
    .await;
    assert!(
        refs.contains("models.py:14:5: def total_area(shapes: list[Shape]) -> float:"),
        "{refs}"
    );
    assert!(
        refs.contains("main.py:1:28: from models import Square, total_area"),
        "{refs}"
    );
    assert!(
        refs.contains("main.py:4:7: print(total_area([sq]))"),
        "{refs}"
    );
    let without = ok(&ws, &tool, json!({"operation": "findReferences", "filePath": "models.py", "line": 14, "character": 5, "includeDeclaration": false})).await;
    assert!(!without.contains("models.py:14:5"), "{without}");

    let hover = ok(
        &ws,
        &tool,
        json!({"operation": "hover", "filePath": "models.py", "line": 14, "character": 5}),
    )
    .await;
    assert!(
        hover.contains("def total_area(shapes: list[Shape]) -> float")
            && hover.contains("The sum of the areas."),
        "{hover}"
    );

    let symbols = ok(
        &ws,
        &tool,
        json!({"operation": "documentSymbol", "filePath": "models.py"}),
    )
    .await;
    assert!(
        symbols.contains("Class Shape — models.py:1:7: class Shape:"),
        "{symbols}"
    );
    assert!(
        symbols.contains("  Method area — models.py:10:9: def area(self) -> float:"),
        "nested under Square: {symbols}"
    );

    let found = ok(
        &ws,
        &tool,
        json!({"operation": "workspaceSymbol", "query": "total_area"}),
    )
    .await;
    assert!(
        found.contains("Function total_area — models.py:14:5"),
        "{found}"
    );

    // pyright has no implementation provider: said before asking.
    let imp = call(&tool, &ws, json!({"operation": "goToImplementation", "filePath": "models.py", "line": 2, "character": 9})).await;
    let text = imp.llm_text();
    assert!(
        imp.is_error()
            && text.contains(
                "`python` does not offer goToImplementation (no `implementationProvider`"
            ),
        "{text}"
    );
    servers.shutdown().await;
}

/// The first question of a fresh server is `workspaceSymbol`, before any file was opened:
/// pyright answers an empty list until it has listed the project, and that answer is
/// not the one given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_workspace_symbol_of_a_fresh_server_finds_the_function() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    let found = ok(
        &ws,
        &tool,
        json!({"operation": "workspaceSymbol", "query": "total_area"}),
    )
    .await;
    assert!(
        found.contains("Function total_area — models.py:14:5"),
        "{found}"
    );
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_hierarchy() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    let prepared = ok(&ws, &tool, json!({"operation": "prepareCallHierarchy", "filePath": "models.py", "line": 14, "character": 5})).await;
    assert!(
        prepared.contains("Function total_area — models.py:14:5"),
        "{prepared}"
    );
    let item: Value = prepared
        .lines()
        .find_map(|l| l.trim().strip_prefix("callHierarchyItem: "))
        .map(|j| serde_json::from_str(j).unwrap())
        .expect("the item is given");
    let incoming = ok(
        &ws,
        &tool,
        json!({"operation": "incomingCalls", "callHierarchyItem": item}),
    )
    .await;
    assert!(
        incoming.contains("main.py:4:7: print(total_area([sq]))"),
        "{incoming}"
    );
    // An item the model made up, naming a file outside the workspace, is refused.
    let mut outside = item.clone();
    outside["uri"] = json!("file:///etc/secret.py");
    let refused = call(
        &tool,
        &ws,
        json!({"operation": "incomingCalls", "callHierarchyItem": outside}),
    )
    .await;
    assert!(
        refused.is_error() && refused.llm_text().contains("the item's file: "),
        "{}",
        refused.llm_text()
    );
    let outgoing = ok(
        &ws,
        &tool,
        json!({"operation": "outgoingCalls", "callHierarchyItem": item}),
    )
    .await;
    assert!(
        outgoing.contains("calls") && outgoing.contains("area"),
        "{outgoing}"
    );
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_follow_the_file_on_disk_and_code_actions_are_listed() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    let diags = ok(
        &ws,
        &tool,
        json!({"operation": "diagnostics", "filePath": "main.py"}),
    )
    .await;
    assert!(
        diags.contains("main.py:5:14: count: int = \"three\""),
        "{diags}"
    );
    assert!(
        diags.contains("error:") && diags.contains("\"three\""),
        "{diags}"
    );
    let all = ok(&ws, &tool, json!({"operation": "workspaceDiagnostics"})).await;
    assert!(all.contains("main.py:5:14"), "{all}");

    // The file changes on disk: the next call sends it (didChange) and sees the fix.
    ws.write("main.py", &MAIN.replace("\"three\"", "3"));
    let fixed = ok(
        &ws,
        &tool,
        json!({"operation": "diagnostics", "filePath": "main.py"}),
    )
    .await;
    assert!(fixed.contains("No diagnostics"), "{fixed}");

    ws.write("main.py", "import os\nimport sys\nprint(sys.argv)\n");
    let actions = call(&tool, &ws, json!({"operation": "codeActions", "filePath": "main.py", "line": 1, "character": 1, "endLine": 3, "endCharacter": 1})).await;
    assert!(!actions.is_error(), "{}", actions.llm_text());
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_go_through_the_workspace_boundary() {
    let Some((ws, tool, servers)) = project() else {
        return;
    };
    let outside = ws.dir.path().join("outside.py");
    std::fs::write(&outside, "x = 1\n").unwrap();
    let refused = call(
        &tool,
        &ws,
        json!({"operation": "documentSymbol", "filePath": outside}),
    )
    .await;
    assert!(refused.is_error(), "{}", refused.llm_text());
    // A definition in the standard library (typeshed, outside the workspace) is named,
    // not read.
    let def = ok(
        &ws,
        &tool,
        json!({"operation": "goToDefinition", "filePath": "main.py", "line": 4, "character": 2}),
    )
    .await;
    assert!(
        def.contains("builtins.pyi") && def.contains("(outside the workspace; not read)"),
        "{def}"
    );
    let missing = call(
        &tool,
        &ws,
        json!({"operation": "hover", "filePath": "main.py"}),
    )
    .await;
    assert!(
        missing.llm_text().contains("needs `line` and `character`"),
        "{}",
        missing.llm_text()
    );
    let uncovered = call(
        &tool,
        &ws,
        json!({"operation": "documentSymbol", "filePath": "notes.txt"}),
    )
    .await;
    assert!(uncovered.is_error());
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_breaks_the_types_reports_the_new_error() {
    let Some((ws, _tool, servers)) = project() else {
        return;
    };
    let write = toolbelt_lsp::CheckedEdits::new(
        std::sync::Arc::new(toolbelt_tools::WriteFile::new(ws.env.clone())),
        ws.env.clone(),
        servers.clone(),
        std::time::Duration::from_secs(20),
    );
    let write_file = |content: String| {
        let args = json!({"file_path": ws.root.join("models.py"), "content": content});
        let invocation = toolbelt_core::Tool::build(&write, args).unwrap();
        invocation.execute(toolbelt_core::ExecContext::new(ws.env.clone()))
    };
    // No server runs yet: the session's first edit starts it and waits for its answer
    // (main.py's error is in another file and not this edit's).
    let broken =
        write_file(MODELS.replace("return self.side * self.side", "return self.side + \"cm\""))
            .await;
    let text = broken.llm_text();
    assert!(!broken.is_error(), "{text}");
    assert!(
        text.contains("The language server `python` reports 1 new error(s) after this change:"),
        "{text}"
    );
    assert!(
        text.contains("models.py:11:16: return self.side + \"cm\""),
        "{text}"
    );
    assert!(
        text.contains("error: Operator \"+\" not supported"),
        "{text}"
    );
    assert!(
        servers
            .states()
            .await
            .iter()
            .any(|(_, s)| *s == toolbelt_lsp::ServerState::Running),
        "the edit started the server"
    );
    // Fixing it reports nothing; breaking it again, with the server warm, reports it.
    let fixed = write_file(MODELS.to_string()).await;
    assert!(
        !fixed.llm_text().contains("new error"),
        "{}",
        fixed.llm_text()
    );
    let again = write_file(MODELS.replace(
        "-> float:\n        return self",
        "-> str:\n        return self",
    ))
    .await;
    assert!(
        again.llm_text().contains("new error(s) after this change"),
        "{}",
        again.llm_text()
    );
    servers.shutdown().await;
}
