//! Converts an HTML file as `web_fetch` does and prints the Markdown's size: the
//! conversion measured alone (`bench/web_fetch.sh`).
//!
//! Usage: `cargo run --release -p toolbelt-tools --example html_to_markdown FILE`

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: html_to_markdown FILE");
        return std::process::ExitCode::from(2);
    };
    match std::fs::read(&path) {
        Ok(bytes) => {
            let size = bytes.len();
            let markdown = toolbelt_tools::html_to_markdown(bytes, None);
            println!(
                "{size} bytes of HTML -> {} bytes of Markdown",
                markdown.len()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("html_to_markdown: {}: {e}", path.to_string_lossy());
            std::process::ExitCode::FAILURE
        }
    }
}
