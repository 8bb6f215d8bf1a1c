//! Skills from real folders in a temporary directory, and the `skill` tool's calls
//! through a real scheduler with the real shell tool.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolbelt_engine::scheduler::CallRules;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_config::ApprovalMode;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ErrorKind, Tool, ToolEnvironment, WorkspaceRoots};
use toolbelt_engine::{
    registry::Origin, registry::ToolRegistry, rules::PermissionRules, rules::RuleList,
};
use toolbelt_engine::{
    scheduler::Permissions, scheduler::Scheduler, scheduler::SchedulerConfig,
    scheduler::ToolCallRequest, scheduler::TurnInfo,
};

use super::*;

struct Dirs {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    Dirs {
        project: project.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
        _tmp: tmp,
    }
}

fn skill_file(root: &Path, dir: &str, text: &str) -> PathBuf {
    let path = root.join(dir).join("SKILL.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn skill(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nDo the {name} thing.\n"
    )
}

fn load(d: &Dirs, trusted: bool) -> Skills {
    Skills::load(Some(&d.project), Some(&d.home), trusted)
}

#[test]
fn skills_load_from_all_three_folders_with_project_qwen_first() {
    let d = dirs();
    skill_file(
        &d.project,
        ".qwen/skills/alpha",
        &skill("alpha", "from project qwen"),
    );
    skill_file(
        &d.project,
        ".agents/skills/alpha",
        &skill("alpha", "from project agents"),
    );
    skill_file(&d.home, ".qwen/skills/alpha", &skill("alpha", "from user"));
    skill_file(
        &d.project,
        ".agents/skills/beta",
        &skill("beta", "from project agents"),
    );
    skill_file(&d.home, ".qwen/skills/beta", &skill("beta", "from user"));
    skill_file(&d.home, ".qwen/skills/gamma", &skill("gamma", "from user"));
    let s = load(&d, true);
    assert_eq!(s.warnings(), &[] as &[String]);
    let seen: Vec<(&str, &str, SkillFolder)> = s
        .all()
        .iter()
        .map(|k| (k.name.as_str(), k.description.as_str(), k.folder))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("alpha", "from project qwen", SkillFolder::ProjectQwen),
            ("beta", "from project agents", SkillFolder::ProjectAgents),
            ("gamma", "from user", SkillFolder::User),
        ]
    );
    let hidden: Vec<(&str, SkillFolder)> = s
        .shadowed()
        .iter()
        .map(|h| (h.name.as_str(), h.folder))
        .collect();
    assert_eq!(
        hidden,
        vec![
            ("alpha", SkillFolder::ProjectAgents),
            ("alpha", SkillFolder::User),
            ("beta", SkillFolder::User)
        ]
    );
    assert_eq!(
        s.get("alpha").unwrap().body,
        "# alpha\n\nDo the alpha thing.\n"
    );
    let readable: Vec<&Path> = s.readable_dirs().collect();
    assert_eq!(readable, vec![d.home.join(".qwen/skills/gamma").as_path()]);
}

#[test]
fn a_broken_skill_is_a_warning_with_file_line_and_key_and_the_others_load() {
    let d = dirs();
    let bad_type = skill_file(
        &d.project,
        ".qwen/skills/bad-type",
        "---\nname: bad-type\ndescription:\n  nested: map\n---\nbody\n",
    );
    let no_description = skill_file(
        &d.project,
        ".qwen/skills/no-desc",
        "---\nname: no-desc\n---\nbody\n",
    );
    let bad_yaml = skill_file(
        &d.project,
        ".qwen/skills/bad-yaml",
        "---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n",
    );
    let bad_name = skill_file(
        &d.project,
        ".qwen/skills/bad-name",
        "---\ndescription: d\nname: \"evil\\e[31m<x>\"\n---\nbody\n",
    );
    skill_file(&d.project, ".qwen/skills/good", &skill("good", "works"));
    let s = load(&d, true);
    assert_eq!(s.all().len(), 1);
    assert_eq!(s.all()[0].name, "good");
    let w = s.warnings().join("\n");
    let expect = [
        format!("{}: line 4: key `description`: ", bad_type.display()),
        format!("{}: key `description`: missing", no_description.display()),
        format!("{}: line 3", bad_yaml.display()),
        format!("{}: line 3: key `name`: ", bad_name.display()),
    ];
    for e in &expect {
        assert!(w.contains(e.as_str()), "expected {e:?} in:\n{w}");
    }
    assert!(
        !w.contains('\u{1b}'),
        "no control character reaches a warning: {w:?}"
    );
}

#[test]
fn symbolic_links_out_of_the_project_are_not_followed() {
    let d = dirs();
    let outside = d.home.join("elsewhere");
    skill_file(&outside, "stolen", &skill("stolen", "outside"));
    std::fs::create_dir_all(d.project.join(".qwen/skills")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("stolen"),
        d.project.join(".qwen/skills/stolen"),
    )
    .unwrap();
    std::fs::create_dir_all(d.project.join(".agents/skills/linked")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("stolen/SKILL.md"),
        d.project.join(".agents/skills/linked/SKILL.md"),
    )
    .unwrap();
    // A whole skills folder that is a link out of the project.
    std::fs::create_dir_all(d.project.join("sub")).unwrap();
    let s = load(&d, true);
    assert!(s.is_empty(), "{:?}", s.all());
    let w = s.warnings().join("\n");
    assert_eq!(s.warnings().len(), 2, "{w}");
    assert!(w.contains("outside the project"), "{w}");

    let d = dirs();
    std::fs::create_dir_all(d.project.join(".qwen")).unwrap();
    skill_file(&d.home, "x/one", &skill("one", "d"));
    std::os::unix::fs::symlink(d.home.join("x"), d.project.join(".qwen/skills")).unwrap();
    let s = load(&d, true);
    assert!(s.is_empty());
    assert!(
        s.warnings()[0].contains("the skills folder leads outside the project"),
        "{:?}",
        s.warnings()
    );
}

#[test]
fn a_user_skill_may_be_a_link_and_a_link_inside_the_project_is_fine() {
    let d = dirs();
    skill_file(&d.home, "dotfiles/mine", &skill("mine", "d"));
    std::fs::create_dir_all(d.home.join(".qwen/skills")).unwrap();
    std::os::unix::fs::symlink(
        d.home.join("dotfiles/mine"),
        d.home.join(".qwen/skills/mine"),
    )
    .unwrap();
    skill_file(&d.project, "shared/team", &skill("team", "d"));
    std::fs::create_dir_all(d.project.join(".agents/skills")).unwrap();
    std::os::unix::fs::symlink(
        d.project.join("shared/team"),
        d.project.join(".agents/skills/team"),
    )
    .unwrap();
    let s = load(&d, true);
    assert_eq!(s.warnings(), &[] as &[String]);
    assert_eq!(s.all().len(), 2);
    assert_eq!(s.get("mine").unwrap().dir, d.home.join("dotfiles/mine"));
}

#[test]
fn hostile_files_are_refused_without_hanging() {
    let d = dirs();
    let fifo_dir = d.project.join(".qwen/skills/fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        fifo_dir.join("SKILL.md"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let huge = format!(
        "---\nname: huge\ndescription: d\n---\n{}",
        "x".repeat(MAX_SKILL_FILE_BYTES as usize)
    );
    skill_file(&d.project, ".qwen/skills/huge", &huge);
    let binary = d.project.join(".qwen/skills/binary/SKILL.md");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::fs::write(&binary, b"---\nname: binary\ndescription: \xff\xfe\n---\n").unwrap();
    let long = format!(
        "---\nname: long\ndescription: \"{}\\u0007 end\"\n---\nbody",
        "word ".repeat(400)
    );
    skill_file(&d.project, ".qwen/skills/long", &long);
    skill_file(
        &d.project,
        ".qwen/skills/evil\u{1b}[31m",
        &skill("evil", "d"),
    );
    skill_file(
        &d.project,
        ".qwen/skills/rtl",
        &skill("rtl", "\"safe \\u202e txt.exe\""),
    );
    let s = load(&d, true);
    let w = s.warnings().join("\n");
    assert!(w.contains("fifo/SKILL.md: not a regular file"), "{w}");
    assert!(
        w.contains("huge/SKILL.md: ") && w.contains("bytes; a SKILL.md of at most"),
        "{w}"
    );
    assert!(w.contains("binary/SKILL.md: not UTF-8"), "{w}");
    assert!(w.contains("longer than 1024 characters; cut"), "{w}");
    assert!(
        w.contains("evil\\x1b[31m\": the folder name is not plain text"),
        "{w}"
    );
    assert!(!w.contains('\u{1b}'), "{w:?}");
    assert!(s.get("evil").is_none());
    assert_eq!(s.get("rtl").unwrap().description, "safe txt.exe");
    let long = s.get("long").unwrap();
    assert_eq!(long.description.chars().count(), MAX_DESCRIPTION_CHARS);
    assert!(!long.description.chars().any(char::is_control));
}

#[test]
fn allowed_tools_take_a_list_or_a_line_and_bad_entries_are_warned() {
    let d = dirs();
    skill_file(
        &d.project,
        ".qwen/skills/list",
        "---\nname: list\ndescription: d\nallowed-tools:\n  - run_shell_command(git *)\n  - Read\n---\n",
    );
    skill_file(
        &d.project,
        ".qwen/skills/line",
        "---\nname: line\ndescription: d\nallowed-tools: Bash(git log:*), Read Grep(foo bar\n---\n",
    );
    let s = load(&d, true);
    assert_eq!(
        s.get("list").unwrap().allowed_tools,
        ["run_shell_command(git *)", "Read"]
    );
    assert_eq!(
        s.get("line").unwrap().allowed_tools,
        ["Bash(git log:*)", "Read"]
    );
    let w = s.warnings().join("\n");
    assert!(
        w.contains("line 4: key `allowed-tools`: \"Grep(foo bar\" is no permission rule"),
        "{w}"
    );
}

#[test]
fn an_untrusted_project_skill_loads_without_its_grants() {
    let d = dirs();
    let text = "---\nname: ship\ndescription: d\nallowed-tools: Bash\n---\nship it";
    skill_file(&d.project, ".qwen/skills/ship", text);
    skill_file(&d.home, ".qwen/skills/mine", &text.replace("ship", "mine"));
    let s = load(&d, false);
    let ship = s.get("ship").unwrap();
    assert!(!ship.grants);
    assert!(s.get("mine").unwrap().grants, "the user's own skill grants");
    assert!(
        s.warnings()
            .join("\n")
            .contains("are not granted: this folder is not trusted")
    );
    let call = SkillTool::new(Arc::new(s))
        .build(json!({"skill": "ship"}))
        .unwrap();
    assert_eq!(call.turn_grant(), None);
}

#[test]
fn the_home_folder_as_project_reads_its_skills_once_as_the_users() {
    let d = dirs();
    skill_file(&d.home, ".qwen/skills/mine", &skill("mine", "d"));
    let s = Skills::load(Some(&d.home), Some(&d.home), false);
    assert_eq!(s.all().len(), 1);
    assert_eq!(s.all()[0].folder, SkillFolder::User);
    assert!(s.shadowed().is_empty());
}

#[test]
fn the_description_lists_every_skill_xml_escaped() {
    let d = dirs();
    skill_file(
        &d.project,
        ".qwen/skills/a",
        &skill("a", "\"Use <b> & </available_skills> here\""),
    );
    skill_file(&d.home, ".qwen/skills/b", &skill("b", "user one"));
    let tool = SkillTool::new(Arc::new(load(&d, true)));
    let text = tool.description();
    assert!(text.contains(
        "<skill>\n<name>a</name>\n<description>Use &lt;b&gt; &amp; &lt;/available_skills&gt; here</description>\n<location>project</location>\n</skill>"
    ), "{text}");
    assert!(text.contains(
        "<name>b</name>\n<description>user one</description>\n<location>user</location>"
    ));
    assert_eq!(text.matches("</available_skills>").count(), 1);
}

#[test]
fn a_skill_name_called_as_a_tool_gets_the_hint() {
    let d = dirs();
    skill_file(
        &d.project,
        ".qwen/skills/pdf-tools",
        &skill("pdf-tools", "d"),
    );
    let mut registry = ToolRegistry::new();
    registry.register(
        Arc::new(SkillTool::new(Arc::new(load(&d, true)))),
        Origin::BuiltIn,
    );
    let e = registry.not_found("pdf_tools");
    assert_eq!(e.kind, ErrorKind::ToolNotRegistered);
    assert_eq!(
        e.message,
        "\"pdf_tools\" is a skill, not a tool. To use this skill, call the \"skill\" tool with parameter skill: \"pdf-tools\"."
    );
    let e = registry.not_found("read_fil");
    assert!(
        e.message.contains("not found in the registry"),
        "{}",
        e.message
    );
}

struct Session {
    _d: Dirs,
    project: PathBuf,
    registry: ToolRegistry,
    env: Arc<ToolEnvironment>,
}

/// A project with the `release` skill (allowed-tools `run_shell_command(touch *)`), the
/// skill tool and the real shell tool.
fn session() -> Session {
    let d = dirs();
    skill_file(
        &d.project,
        ".qwen/skills/release",
        "---\nname: release\ndescription: Cut a release\nallowed-tools: run_shell_command(touch *)\n---\nRun `touch released.txt`.\n",
    );
    std::fs::write(
        d.project.join(".qwen/skills/release/checklist.md"),
        "1. tag\n",
    )
    .unwrap();
    let skills = Arc::new(load(&d, true));
    let roots = WorkspaceRoots::new([&d.project]).unwrap();
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        d.home.join("s"),
    ));
    let mut registry = ToolRegistry::new();
    crate::register_builtins(&mut registry, &env);
    registry.register(Arc::new(SkillTool::new(skills)), Origin::BuiltIn);
    Session {
        project: d.project.clone(),
        _d: d,
        registry,
        env,
    }
}

fn scheduler(s: &Session, mode: ApprovalMode, rules: &[(RuleList, &str)]) -> Scheduler {
    let mut permissions =
        PermissionRules::new(&crate::rule_vocabulary()).with_base(&s.project, None);
    for (list, text) in rules {
        permissions.add(*list, text);
    }
    Scheduler::new(
        s.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::from_rules(permissions),
            mode,
            None,
            None,
        ))
        .turn_grants(true),
    )
}

fn request(id: &str, name: &str, args: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest {
        call_id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

async fn turn(
    s: &Session,
    sch: &Scheduler,
    calls: Vec<ToolCallRequest>,
) -> Vec<toolbelt_core::ToolResult> {
    sch.run(
        &s.registry,
        calls,
        TurnInfo::default(),
        &CancellationToken::new(),
    )
    .await
    .into_iter()
    .map(|c| c.result)
    .collect()
}

/// A command that needs approval (it writes), so headless it runs only when allowed.
fn touch_call(id: &str) -> ToolCallRequest {
    request(
        id,
        "run_shell_command",
        json!({"command": "touch released.txt"}),
    )
}

#[tokio::test]
async fn a_skill_grants_its_tools_until_the_turn_ends() {
    let s = session();
    let sch = scheduler(&s, ApprovalMode::Default, &[]);
    let before = turn(&s, &sch, vec![touch_call("c0")]).await;
    assert_eq!(
        before[0].error.as_ref().unwrap().kind,
        ErrorKind::ExecutionDenied
    );

    let loaded = turn(
        &s,
        &sch,
        vec![request("c1", "skill", json!({"skill": "release"}))],
    )
    .await;
    let text = loaded[0].llm_text();
    assert!(text.contains("Run `touch released.txt`."), "{text}");
    assert!(
        text.contains(&format!(
            "- {}",
            s.project
                .join(".qwen/skills/release/checklist.md")
                .display()
        )),
        "{text}"
    );
    assert!(
        text.contains("run without asking the user: run_shell_command(touch *)"),
        "{text}"
    );
    assert_eq!(sch.turn_grant_sources(), ["skill \"release\""]);

    let ran = turn(&s, &sch, vec![touch_call("c2")]).await;
    assert!(ran[0].error.is_none(), "{:?}", ran[0]);
    assert!(s.project.join("released.txt").exists());
    // Only what the skill names: another command still needs approval.
    let other = turn(
        &s,
        &sch,
        vec![request(
            "c3",
            "run_shell_command",
            json!({"command": "mkdir x"}),
        )],
    )
    .await;
    assert_eq!(
        other[0].error.as_ref().unwrap().kind,
        ErrorKind::ExecutionDenied
    );

    sch.end_turn();
    let after = turn(&s, &sch, vec![touch_call("c4")]).await;
    assert_eq!(
        after[0].error.as_ref().unwrap().kind,
        ErrorKind::ExecutionDenied,
        "the grant ended with the turn"
    );
}

#[tokio::test]
async fn a_grant_in_the_same_answer_covers_the_calls_after_the_skill() {
    let s = session();
    let sch = scheduler(&s, ApprovalMode::Default, &[]);
    let results = turn(
        &s,
        &sch,
        vec![
            touch_call("c0"),
            request("c1", "skill", json!({"skill": "release"})),
            touch_call("c2"),
        ],
    )
    .await;
    assert!(
        results[0].is_error(),
        "a call before the skill is not covered"
    );
    assert!(results[2].error.is_none(), "{:?}", results[2]);
}

#[tokio::test]
async fn a_grant_never_beats_a_deny_rule_an_ask_rule_or_plan_mode() {
    let s = session();
    let load = || request("c1", "skill", json!({"skill": "release"}));
    let sch = scheduler(
        &s,
        ApprovalMode::Default,
        &[(RuleList::Deny, "run_shell_command(touch *)")],
    );
    let r = turn(&s, &sch, vec![load(), touch_call("c2")]).await;
    assert!(
        r[1].error
            .as_ref()
            .unwrap()
            .message
            .contains("denied by permission rules"),
        "{:?}",
        r[1]
    );

    let sch = scheduler(&s, ApprovalMode::Default, &[(RuleList::Ask, "Bash")]);
    let r = turn(&s, &sch, vec![load(), touch_call("c2")]).await;
    assert!(
        r[1].error
            .as_ref()
            .unwrap()
            .message
            .contains("needs the user's approval"),
        "{:?}",
        r[1]
    );

    let sch = scheduler(&s, ApprovalMode::Plan, &[]);
    let r = turn(&s, &sch, vec![load(), touch_call("c2")]).await;
    assert!(r[0].error.is_none(), "the skill itself is read-only");
    assert!(
        r[1].error
            .as_ref()
            .unwrap()
            .message
            .contains("Plan mode is active"),
        "{:?}",
        r[1]
    );
}

#[tokio::test]
async fn a_scheduler_without_turns_takes_no_grant() {
    let s = session();
    let sch = Scheduler::new(
        s.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Default,
            None,
            None,
        )),
    );
    let r = turn(
        &s,
        &sch,
        vec![
            request("c1", "skill", json!({"skill": "release"})),
            touch_call("c2"),
        ],
    )
    .await;
    assert!(r[1].is_error());
    assert!(sch.turn_grant_sources().is_empty());
}

#[tokio::test]
async fn a_deny_rule_on_a_skill_keeps_it_and_its_grant_out() {
    let s = session();
    let sch = scheduler(
        &s,
        ApprovalMode::Default,
        &[(RuleList::Deny, "Skill(release)")],
    );
    let r = turn(
        &s,
        &sch,
        vec![
            request("c1", "skill", json!({"skill": "release"})),
            touch_call("c2"),
        ],
    )
    .await;
    assert!(
        r[0].error
            .as_ref()
            .unwrap()
            .message
            .contains("Skill(release)"),
        "{:?}",
        r[0]
    );
    assert!(r[1].is_error(), "a refused skill grants nothing");
    assert!(sch.turn_grant_sources().is_empty());
}

#[test]
fn plugin_skills_join_after_the_others_and_are_readable_as_the_users() {
    let d = dirs();
    skill_file(&d.home, ".qwen/skills/alpha", &skill("alpha", "from user"));
    let plugin = d.home.join("plugin/skills");
    skill_file(&plugin, "alpha", &skill("alpha", "from the plugin"));
    skill_file(&plugin, "delta", &skill("delta", "from the plugin"));
    let s = load(&d, false).with_plugins(std::slice::from_ref(&plugin));
    let seen: Vec<(&str, &str, SkillFolder)> = s
        .all()
        .iter()
        .map(|k| (k.name.as_str(), k.description.as_str(), k.folder))
        .collect();
    assert_eq!(
        seen,
        [
            ("alpha", "from user", SkillFolder::User),
            ("delta", "from the plugin", SkillFolder::Plugin),
        ]
    );
    assert_eq!(s.shadowed()[0].folder, SkillFolder::Plugin);
    let readable: Vec<&Path> = s.readable_dirs().collect();
    assert!(
        readable.contains(&plugin.join("delta").canonicalize().unwrap().as_path()),
        "{readable:?}"
    );
    // A plugin is the application's: its skills keep their allowed-tools even where
    // the project is not trusted.
    assert_eq!(SkillFolder::Plugin.level(), "plugin");
}
