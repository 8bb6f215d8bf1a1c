//! The hooks engine with real settings files, real hook scripts and a real HTTP server
//! on 127.0.0.1, each test in a home and project of its own.

// A test target: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::too_many_lines)]

mod callbacks;
mod commands;
mod config;
mod http;
mod listing;
mod matching;
mod support;
