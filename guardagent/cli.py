"""`guardagent` command line: check one event, evaluate on cases, run one program.

Only click is imported at start-up; each command imports what it needs when it runs, so
`guardagent --help` is instant and `check` pays for the guard graph and nothing else
(`benchmarks/bench_cold_start.py` measures both).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from guardagent.eval.definitions import help_epilog
from guardagent.exit_status import INTERRUPTED, InputError, epilog
from guardagent.memory_store.cli import memory


def _text(value: str, what: str) -> str:
    """`@FILE` reads the file (`@-` reads stdin); anything else is the text itself.

    Whatever the bytes (UTF-8 with or without BOM, UTF-16, Latin-1, raw bytes in argv), the
    result is text the guard can read and the decision can be printed with; undecodable
    bytes become U+FFFD, and a note on stderr says how many.
    """
    from guardagent.readers.textio import clean_text, decode_bytes

    if value == "@-":
        binary = getattr(sys.stdin, "buffer", None)  # a replaced stdin may be text only
        decoded = decode_bytes(binary.read()) if binary else clean_text(sys.stdin.read())
    elif value.startswith("@"):
        decoded = decode_bytes(_read_bytes(Path(value[1:]), what))
    else:
        decoded = clean_text(value)
    note = decoded.note(what)
    if note:
        click.echo(f"note: {note}", err=True)
    return decoded.text


def _read_bytes(path: Path, what: str) -> bytes:
    """The file's bytes; a missing file, a directory or a read error is one clear line."""
    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory; give a file", param_hint=what)
    if not path.is_file():
        raise click.BadParameter(f"no such file: {path}", param_hint=what)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=what) from None


def _guard(profile: str, model: str, base_url: str | None, **settings: Any) -> Any:
    from guardagent.agent import GuardAgent
    from guardagent.llm import ModelConfigError
    from guardagent.profiles.loader import ProfileError

    try:
        return GuardAgent(profile=profile, model=model, base_url=base_url, **settings)
    except (ProfileError, ModelConfigError) as exc:
        raise InputError(str(exc)) from None


class _SetupError(InputError):
    """A deployment setting the command cannot start without: one line, exit status 2."""


NEEDS_KEY = (
    "{option} needs the deployment's key, which signs the thread state and consent "
    "records: set GUARDAGENT_TRACE_KEY (e.g. export GUARDAGENT_TRACE_KEY=$(openssl "
    "rand -hex 32), the same key for every call of the deployment)"
)


def _deployment_settings() -> dict[str, Any]:
    """The deployment's `GUARDAGENT_*` settings (:meth:`GuardContext.from_env`) that are set."""
    from dataclasses import fields

    from guardagent.context import GuardContext

    try:
        context = GuardContext.from_env()
    except ValueError as exc:
        raise _SetupError(str(exc)) from None
    default = GuardContext()
    return {
        f.name: getattr(context, f.name)
        for f in fields(context)
        if getattr(context, f.name) != getattr(default, f.name)
    }


_profile = click.option("--profile", required=True, help="Built-in profile name or path.")
_input = click.option("--input", "agent_input", required=True, help="Agent input: TEXT or @FILE.")
_output = click.option(
    "--output", "agent_output", required=True, help="Agent output: TEXT or @FILE."
)
_model = click.option(
    "--model",
    default="offline",
    show_default=True,
    help="'offline', or an init_chat_model spec such as openai:gpt-4o.",
)
_base_url = click.option(
    "--base-url", default=None, help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1."
)
_memory_dir = click.option("--memory-dir", default=None, help="Directory of the Chroma memory.")
_memory_url = click.option("--memory-url", default=None, help="Chroma server URL (shared memory).")


class _LazyGroup(click.Group):
    """A command group whose heavier subcommand groups load on first use.

    `guardagent policy` pulls in z3, the readers and pydantic (about 0.3 s); `--help` lists
    it from the short text below instead, so only running it pays for the import.
    """

    LAZY: dict[str, tuple[str, str, str]] = {
        "policy": (
            "guardagent.authoring.cli",
            "policy",
            "Policy models: predicates, rules and an action tree, verified with z3.",
        ),
        "explain": (
            "guardagent.explain.cli",
            "explain",
            "Draw a decision (check's JSON): provenance chain and rule circuit.",
        ),
    }
    _listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            module, attr, short = self.LAZY[cmd_name]
            if self._listing:  # the help listing only needs the one-line text
                return click.Command(cmd_name, help=short)
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; Ctrl-C at any point (start-up too) exits 130, not click's 1."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            raise click.exceptions.Exit(INTERRUPTED) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


@click.group(cls=_LazyGroup)
@click.version_option(package_name="guardagent")
def main() -> None:
    """GuardAgent: guard an LLM agent's actions with generated, sandboxed guardrail code."""


_CHECK_EXITS = epilog(
    "check, with or without --server:",
    "  0  allowed",
    "  1  denied (the JSON says why; also when no decision came from the service)",
    "  2  input or evidence it could not read (denied; an event or a trace over its",
    "     size limit too: the JSON's `unreadable` says what)",
)


@main.command(epilog=_CHECK_EXITS)
@_profile
@click.option("--input", "agent_input", default=None, help="Agent input: TEXT or @FILE.")
@click.option("--output", "agent_output", default=None, help="Agent output: TEXT or @FILE.")
@click.option(
    "--trace",
    "trace_file",
    default=None,
    metavar="FILE|-",
    help="A whole conversation and its proposed tool call (LangChain messages_to_dict "
    "JSON or OpenAI chat), instead of --input/--output.",
)
@click.option(
    "--consent",
    "consent_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="With --trace: JSON list of the host's review records, each signed with "
    "GUARDAGENT_TRACE_KEY and naming the thread (required).",
)
@click.option(
    "--state",
    "state_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="With --trace: the thread's state file, read if present and rewritten "
    "(signed with GUARDAGENT_TRACE_KEY, required).",
)
@click.option(
    "--task",
    "task_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="With --trace: the thread's task policy (JSON or YAML: name, params, "
    "predicates, rules), merged with the profile's policy; a task that cannot "
    "be attached is denied.",
)
@click.option(
    "--rules",
    "rules",
    type=click.Choice(["all", "applied"]),
    default="all",
    show_default=True,
    help="With --trace: the rules the decision lists: every rule of the policy, or "
    "only those that applied to the call (check_trace(rules=...)).",
)
@_model
@_base_url
@_memory_dir
@_memory_url
@click.option("--quiet", is_flag=True, help="Leave the deciding program out of the JSON.")
@click.option(
    "--fields",
    default=None,
    metavar="A,B,...",
    help="Print only these decision fields, e.g. --fields allowed,violations,reason.",
)
@click.option(
    "--server",
    default=None,
    metavar="URL[,URL...]",
    help="Send the event or trace to a guard service (`guardagent serve`) instead of "
    "deciding here; token from $GUARDAGENT_SERVICE_TOKEN. Several replicas' "
    "URLs, comma-separated: one that gives no decision (down, 502/503/504) "
    "passes the request to the next, with the same idempotency key.",
)
@click.option(
    "--thread-id",
    default=None,
    help="The thread's id: with --server the thread the service keeps; with --trace "
    "the thread consent records name (default: the state's, else a new one).",
)
@click.option(
    "--idempotency-key",
    default=None,
    help="With --server: a retry with the same key gets the stored decision.",
)
@click.pass_context
def check(
    ctx: click.Context,
    profile: str,
    agent_input: str | None,
    agent_output: str | None,
    trace_file: str | None,
    consent_file: str | None,
    state_file: str | None,
    task_file: str | None,
    rules: str,
    model: str,
    base_url: str | None,
    memory_dir: str | None,
    memory_url: str | None,
    quiet: bool,
    fields: str | None,
    server: str | None,
    thread_id: str | None,
    idempotency_key: str | None,
) -> None:
    """Decide whether one event (or one traced tool call) may pass; prints the decision as JSON.

    The guard is the deployment's: every GUARDAGENT_* variable applies (GUARDAGENT_TRACE_KEY,
    GUARDAGENT_MODEL, GUARDAGENT_MAX_TRACE_BYTES, ...); options given here win.

    With --server the guard service decides (same JSON, same exit status; 1 also when no
    decision came from the service).
    """
    if (trace_file is None) == (agent_input is None or agent_output is None):
        raise click.UsageError("give --input and --output, or --trace")
    if trace_file is None and (consent_file or state_file or task_file or rules != "all"):
        raise click.UsageError("--consent, --state, --task and --rules go with --trace")
    task = _task(task_file)
    if server is not None:  # before any heavy import: the hook pays the interpreter only
        ctx.exit(
            _check_server(
                ctx,
                server,
                profile,
                agent_input,
                agent_output,
                trace_file,
                consent_file,
                state_file,
                quiet,
                fields,
                thread_id,
                idempotency_key,
                task,
                rules,
            )
        )
    if idempotency_key is not None or (thread_id is not None and trace_file is None):
        raise click.UsageError(
            "--idempotency-key goes with --server, --thread-id with --server or --trace"
        )
    if thread_id is not None:  # the ids the service keeps threads under (a local check too)
        from guardagent.service.threads import MAX_THREAD_ID_CHARS

        if not 0 < len(thread_id) <= MAX_THREAD_ID_CHARS:
            raise click.BadParameter(
                f"a thread id is a non-empty string of at most {MAX_THREAD_ID_CHARS} characters",
                param_hint="--thread-id",
            )
    try:
        decision, shown = _check_here(
            ctx,
            profile,
            agent_input,
            agent_output,
            trace_file,
            consent_file,
            state_file,
            model,
            base_url,
            memory_dir,
            memory_url,
            quiet,
            fields,
            thread_id,
            task,
            rules,
        )
    except click.UsageError:
        raise  # exits 2 already
    except click.ClickException as exc:  # a file, profile or setting it could not read
        raise InputError(exc.message) from None
    click.echo(shown)
    ctx.exit(0 if decision.allowed else 2 if decision.unreadable else 1)


def _check_here(
    ctx: click.Context,
    profile: str,
    agent_input: str | None,
    agent_output: str | None,
    trace_file: str | None,
    consent_file: str | None,
    state_file: str | None,
    model: str,
    base_url: str | None,
    memory_dir: str | None,
    memory_url: str | None,
    quiet: bool,
    fields: str | None,
    thread_id: str | None,
    task: Any = None,
    rules: str = "all",
) -> tuple[Any, str]:
    """The local `check`: the decision and the JSON it prints."""
    from click.core import ParameterSource

    from guardagent.readers.textio import dumps_safe
    from guardagent.sandbox.process import without_zygote

    wanted = _decision_fields(fields)
    settings = _deployment_settings()
    settings.pop("profile", None)
    for option in ("--consent", "--state"):
        if (consent_file if option == "--consent" else state_file) and not settings.get(
            "trace_key"
        ):
            raise _SetupError(NEEDS_KEY.format(option=option))
    if ctx.get_parameter_source("model") is not ParameterSource.DEFAULT or "model" not in settings:
        settings["model"] = model
    given = {"base_url": base_url, "memory_dir": memory_dir, "memory_url": memory_url}
    settings.update({name: value for name, value in given.items() if value is not None})
    guard = _guard(profile, settings.pop("model"), settings.pop("base_url", None), **settings)
    with without_zygote():  # one decision, then exit: a fork of this process, no zygote
        if trace_file is not None:
            decision = _check_trace(
                guard, trace_file, consent_file, state_file, thread_id, task, rules
            )
        else:
            decision = guard.check(
                _text(agent_input or "", "--input"), _text(agent_output or "", "--output")
            )
    shown = decision.model_dump(mode="json")
    if quiet:
        shown.pop("program", None)
    if wanted:
        shown = {name: shown[name] for name in wanted if name in shown}
    return decision, dumps_safe(shown)


def _check_server(
    ctx: click.Context,
    server: str,
    profile: str,
    agent_input: str | None,
    agent_output: str | None,
    trace_file: str | None,
    consent_file: str | None,
    state_file: str | None,
    quiet: bool,
    fields: str | None,
    thread_id: str | None,
    idempotency_key: str | None,
    task: Any = None,
    rules: str = "all",
) -> int:
    """`check --server`: deployment options belong to the service, thread state too."""
    from guardagent.service.remote import check_remote

    chosen = [
        name
        for name, source in (
            ("--model", "model"),
            ("--base-url", "base_url"),
            ("--memory-dir", "memory_dir"),
            ("--memory-url", "memory_url"),
        )
        if ctx.get_parameter_source(source) is click.core.ParameterSource.COMMANDLINE
    ]
    if chosen or state_file:
        raise click.UsageError(
            f"{', '.join(chosen or ['--state'])}: with --server the service's "
            "deployment decides these (use --thread-id for thread state)"
        )
    return check_remote(
        server,
        profile,
        trace_file=trace_file,
        consent_file=consent_file,
        quiet=quiet,
        agent_input=None if agent_input is None else _text(agent_input, "--input"),
        agent_output=None if agent_output is None else _text(agent_output, "--output"),
        thread_id=thread_id,
        idempotency_key=idempotency_key,
        fields=fields,
        task=task,
        rules=rules,
    )


def _task(task_file: str | None) -> Any:
    """`--task FILE`'s document (None without one); a file that is not data exits 2."""
    if task_file is None:
        return None
    from guardagent.policy.task_file import TaskFileError, read_task_file

    try:
        return read_task_file(task_file)
    except TaskFileError as exc:
        raise _SetupError(str(exc)) from None


def _check_trace(
    guard: Any,
    trace_file: str,
    consent_file: str | None,
    state_file: str | None,
    thread_id: str | None = None,
    task: Any = None,
    rules: str = "all",
) -> Any:
    """`check --trace`: the bytes are read whole (the size limit is the guard's, not ours)."""
    if trace_file == "-":
        raw: bytes = sys.stdin.buffer.read()
    elif Path(trace_file).is_file():
        raw = Path(trace_file).read_bytes()
    else:
        what = "a directory, not a file" if Path(trace_file).is_dir() else "no such file"
        raise click.BadParameter(f"{what}: {trace_file}", param_hint="--trace")
    key = guard.context.trace_key_bytes
    consent = _consent_records(consent_file, key) if consent_file else []
    state_path = Path(state_file) if state_file else None
    if consent and state_path is None:  # nothing would count the approvals' uses
        raise _SetupError(
            f"--consent {consent_file}: approvals need --state FILE, the thread's "
            "state that counts each approval's uses (without it, an approval of "
            "one call would approve it again on every check)"
        )
    if state_path is not None and state_path.is_dir():
        raise _SetupError(f"--state {state_file}: a directory, not a file")
    state = None
    if state_path is not None and state_path.is_file():
        try:
            state = _json_file(state_path)
        except ValueError as exc:  # evidence, not a setting: the call is denied, file kept
            return _unreadable_state(guard, f"the state file {state_file} does not read ({exc})")
    try:
        decision = guard.check_trace(
            raw, consent=consent, thread_state=state, thread_id=thread_id, task=task, rules=rules
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if state_path is not None and decision.trace_state is not None:
        try:
            state_path.write_text(
                json.dumps(decision.trace_state, separators=(",", ":")), encoding="utf-8"
            )
        except OSError as exc:
            raise _SetupError(
                f"--state {state_file}: cannot write it ({exc.strerror or exc})"
            ) from None
    return decision


def _json_file(path: Path) -> Any:
    """A JSON file in any Unicode encoding (UTF-8, with or without a BOM, UTF-16, UTF-32).

    Raises:
        OSError: the file cannot be read.
        ValueError: not JSON, not Unicode, or nested too deep to read (one line).
    """
    from guardagent.readers.textio import load_json

    return load_json(path.read_bytes())


def _unreadable_state(guard: Any, detail: str) -> Any:
    """The denial of a call whose thread state does not read (fail closed, with the reason)."""
    from guardagent.decision import GuardDecision
    from guardagent.readers.evidence import UnreadableEvidence
    from guardagent.trace import unreadable_fields

    fields = unreadable_fields(UnreadableEvidence("unreadable_state", detail))
    return GuardDecision(**fields, profile=guard.context.profile)


def _consent_records(path: str, key: bytes | None) -> list[Any]:
    """The `--consent` file's records, each readable and signed with the deployment's key."""
    from guardagent.service.consent import consent_problem

    try:
        records = _json_file(Path(path))
    except OSError as exc:
        raise _SetupError(f"--consent {path}: cannot read it ({exc})") from None
    except ValueError as exc:
        raise _SetupError(f"--consent {path}: {exc}") from None
    problem = consent_problem(records, key)
    if problem or not isinstance(records, list):
        raise _SetupError(f"--consent {path}: {problem}")
    return records


def _decision_fields(fields: str | None) -> list[str]:
    """The field names of `--fields`, checked before any work so a typo costs nothing."""
    if not fields:
        return []
    from guardagent.decision import GuardDecision

    wanted = [name.strip() for name in fields.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in GuardDecision.model_fields]
    if unknown:
        raise click.BadParameter(
            f"unknown field(s) {', '.join(unknown)}; a decision has "
            f"{', '.join(GuardDecision.model_fields)}",
            param_hint="--fields",
        )
    return wanted


@main.command(
    name="eval",
    epilog=help_epilog()
    + "\n\n"
    + epilog(
        "eval: 2 whichever input is wrong (profile, cases, an --out of another run),",
        "3 when at least --max-failed-closed of the decisions failed closed, 130 on",
        "Ctrl-C (start-up too; the decisions made so far are kept for --resume).",
    ),
)
@_profile
@click.option(
    "--cases",
    "cases_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Case file (JSONL); default: the profile's shipped benchmark.",
)
@click.option(
    "--method",
    type=click.Choice(["guardagent", "baseline"]),
    default="guardagent",
    show_default=True,
    help="guardagent (code, the graph) or baseline (the model decides directly).",
)
@_model
@_base_url
@click.option(
    "--k",
    "k",
    type=click.IntRange(min=1),
    default=None,
    help="Demonstrations retrieved per event (default: the profile's).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N cases.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for metrics.json, predictions.jsonl, report.md and plots/.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Events in flight at once; outputs stay in case order.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Reuse the decisions already in --out (after Ctrl-C) and run only the rest.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Drop the decisions of an interrupted run in --out and start again.",
)
@click.option(
    "--skip-invalid", is_flag=True, help="Skip malformed case lines (listed in the report)."
)
@click.option(
    "--max-failed-closed",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="Exit 3 with a warning when at least this share of the decisions could not "
    "be made (model down, no verified program).",
)
@click.option("--no-plots", is_flag=True, help="Do not draw PNG plots.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_memory_dir
@_memory_url
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    profile: str,
    cases_path: str | None,
    method: str,
    model: str,
    base_url: str | None,
    k: int | None,
    limit: int | None,
    out_dir: str,
    concurrency: int,
    resume: bool,
    overwrite: bool,
    skip_invalid: bool,
    max_failed_closed: float,
    no_plots: bool,
    quiet: bool,
    memory_dir: str | None,
    memory_url: str | None,
) -> None:
    """Evaluate a guard on labelled cases; writes metrics, predictions, plots and a report.

    Ctrl-C keeps the decisions made so far (predictions.partial.jsonl); run the same command
    with --resume to continue. Exit status: 0 done, 2 bad input, 3 most decisions failed
    closed (see --max-failed-closed), 130 interrupted.
    """
    from guardagent.eval.benchmarks import load_benchmark
    from guardagent.eval.cases import CaseFileError, read_cases
    from guardagent.eval.metrics import failed_closed_warning, unreadable_summary
    from guardagent.eval.predictions import ResumeMismatchError, UnfinishedRunError
    from guardagent.eval.runner import EvalInterruptedError, Guard, run_eval
    from guardagent.llm import is_offline

    if method == "baseline" and is_offline(model):
        from guardagent.eval.baseline import NEEDS_MODEL

        raise InputError(NEEDS_MODEL)
    _known_profile(profile)
    skipped: list[tuple[int, str]] = []
    try:
        if cases_path:
            cases, skipped = read_cases(cases_path, skip_invalid=skip_invalid)
        else:
            cases = load_benchmark(profile)
    except CaseFileError as exc:
        raise InputError(str(exc)) from None
    except FileNotFoundError as exc:
        shown = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
        raise InputError(shown) from None
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    cases = cases[:limit] if limit else cases
    if not cases:
        raise InputError(f"no cases to evaluate in {cases_path or profile}")
    settings: dict[str, Any] = {"memory_dir": memory_dir, "memory_url": memory_url, "k": k}
    guard: Guard
    if method == "baseline":
        guard = _baseline(profile, model, base_url, **settings)
    else:
        guard = _guard(profile, model, base_url, **settings)
    try:
        metrics = run_eval(
            guard,
            cases,
            out_dir,
            concurrency=concurrency,
            progress=not quiet,
            skipped=skipped,
            resume=resume,
            plots=not no_plots,
            overwrite=overwrite,
        )
    except (ResumeMismatchError, UnfinishedRunError) as exc:  # --out holds another run
        raise InputError(str(exc)) from None
    except EvalInterruptedError as exc:
        click.echo(f"\n{exc}", err=True)
        ctx.exit(130)
    headline = {key: metrics[key] for key in ("LPA", "LPP", "LPR", "CCA", "FRA", "n")}
    click.echo(json.dumps({"profile": profile, "method": method, **headline}))
    blind = unreadable_summary(metrics)
    if blind:
        click.echo(blind, err=True)
    if metrics.get("resumed_decisions"):
        click.echo(f"resumed {metrics['resumed_decisions']} decisions from {out_dir}", err=True)
    click.echo(
        f"wrote {out_dir}/metrics.json, predictions.jsonl, report.md (what LPA, LPP, "
        "LPR, CCA and FRA mean: report.md, or guardagent eval --help)",
        err=True,
    )
    failed = failed_closed_warning(metrics, max_failed_closed)
    if failed:
        click.secho(failed, err=True, fg="red", bold=True)
        ctx.exit(3)


def _known_profile(profile: str) -> None:
    """Fail early, naming the known profiles, when `profile` is neither a name nor a path."""
    from guardagent.profiles.loader import ProfileError, load_profile

    try:
        load_profile(profile)
    except ProfileError as exc:
        raise InputError(str(exc)) from None


def _baseline(profile: str, model: str, base_url: str | None, **settings: Any) -> Any:
    from guardagent.eval.baseline import BaselineConfigError, BaselineGuard
    from guardagent.llm import ModelConfigError
    from guardagent.profiles.loader import ProfileError

    try:
        return BaselineGuard(profile=profile, model=model, base_url=base_url, **settings)
    except (ProfileError, ModelConfigError, BaselineConfigError) as exc:
        raise InputError(str(exc)) from None


@main.command(
    name="run-program",
    epilog=epilog(
        "run-program: 0 the program gave a verdict (allow or deny: the JSON's",
        "`decision`), 1 no verdict (rejected, failed, timed out), 2 input it could",
        "not read, or evidence a reader could not read.",
    ),
)
@click.argument("program_file", type=click.Path(exists=True, dir_okay=False))
@_profile
@_input
@_output
@click.option("--timeout", type=float, default=5.0, show_default=True, help="Wall-clock seconds.")
@click.pass_context
def run_program_cmd(
    ctx: click.Context,
    program_file: str,
    profile: str,
    agent_input: str,
    agent_output: str,
    timeout: float,
) -> None:
    """Run one guard program in the sandbox; prints {"ok", "decision", "error"}.

    Exits 1 when the program gave no verdict (rejected, failed or timed out), 2 when a
    reader could not read the event; the JSON says why.
    """
    from guardagent.profiles.loader import ProfileError, load_profile
    from guardagent.sandbox.process import SandboxLimits, run_program, without_zygote

    try:
        tools = load_profile(profile).tools()
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    from guardagent.readers.textio import decode_bytes, dumps_safe

    source = decode_bytes(Path(program_file).read_bytes()).text
    with without_zygote():  # one run, then exit: a fork of this process, no zygote
        result = run_program(
            source,
            tools,
            _text(agent_input, "--input"),
            _text(agent_output, "--output"),
            SandboxLimits(wall_seconds=timeout),
        )
    click.echo(
        dumps_safe({"ok": result["ok"], "decision": result["verdict"], "error": result["error"]})
    )
    if result.get("unreadable"):  # evidence, not the program: as `check` (exit status 2)
        ctx.exit(2)
    if not result["ok"]:  # rejected, timed out or crashed: say so to the shell
        ctx.exit(1)


@main.command(name="export-cases", epilog=epilog())
@_profile
@click.option("--out", "out_file", required=True, type=click.Path(dir_okay=False))
def export_cases(profile: str, out_file: str) -> None:
    """Write a shipped benchmark in the case-file format (JSONL)."""
    from guardagent.eval.benchmarks import PROFILE_BENCHMARKS, load_benchmark
    from guardagent.eval.cases import write_cases

    _known_profile(profile)
    if profile not in PROFILE_BENCHMARKS:
        raise InputError(
            f"profile {profile!r} ships no benchmark to export (only "
            f"{', '.join(PROFILE_BENCHMARKS)} do)"
        )
    try:
        count = write_cases(out_file, load_benchmark(profile))
    except FileNotFoundError as exc:
        shown = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
        raise InputError(shown) from None
    click.echo(f"wrote {count} cases to {out_file}")


@main.group(name="profile", epilog=epilog())
def profile_group() -> None:
    """Create and inspect guard profiles (your own or the built-in ones)."""


@profile_group.command(
    name="check",
    epilog=epilog(
        "profile check: 1 when a program does not reproduce its demonstrations, a",
        "profile without programs (empty `code`: the model writes them) lacks what",
        "one needs, or a trace profile is not ready; 2 when the profile does not load.",
    ),
)
@click.argument("profile_ref", metavar="NAME_OR_PATH")
@click.pass_context
def profile_check(ctx: click.Context, profile_ref: str) -> None:
    """Load a profile, run its programs on its demonstrations, print a table.

    Exits 1 when a program does not reproduce its demonstrations (such a program is never
    used: offline, a profile without a verified program denies every event). Demonstrations
    with an empty `code` ship no program: the model writes it on first use, so there is none
    to run yet (exit 1 only when the profile lacks what a written program needs).
    """
    from guardagent.profiles.check import check_profile, render_check
    from guardagent.profiles.loader import ProfileError, load_profile

    try:
        loaded = load_profile(profile_ref)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    from guardagent.profiles.scaffold import (
        check_trace_profile,
        is_trace_profile,
        render_trace_check,
    )

    if is_trace_profile(loaded):  # no programs: the policy, its labels and example traces
        trace_check = check_trace_profile(loaded)
        click.echo(render_trace_check(trace_check))
        ctx.exit(0 if trace_check.ready else 1)
    result = check_profile(loaded)
    click.echo(render_check(result))
    if not result.verified and not (result.model_written and not result.missing):
        ctx.exit(1)  # no code, nothing missing: nothing failed, the model writes the program


@profile_group.command(name="new", epilog=epilog())
@click.argument("name")
@click.option(
    "--tools",
    "tools_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="JSON file of tool schemas: OpenAI tools/functions, Anthropic tools or "
    'LangChain tool dicts (a list, or {"tools": [...]}).',
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Directory to create (default: ./NAME); must not exist or be empty.",
)
def profile_new(name: str, tools_file: str, out_dir: str | None) -> None:
    """Scaffold a trace-guard profile NAME from tool schemas (deny by default).

    Writes profile.yaml and policy.yaml: every tool labelled untrusted and irreversible
    (fail closed) with its argument names, and denied by a placeholder rule until you say
    when it may run. `guardagent profile check DIR` then lists what is left to edit.
    """
    from guardagent.profiles.scaffold import ScaffoldError, scaffold_profile

    target = Path(out_dir or name)
    try:  # JSON in any Unicode encoding, as every other input file (a UTF-16 export too)
        tools = _json_file(Path(tools_file))
    except OSError as exc:
        raise InputError(f"{tools_file}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InputError(f"{tools_file}: {exc}") from None
    try:
        written = scaffold_profile(name, tools, target)
    except ScaffoldError as exc:
        raise InputError(f"{tools_file}: {exc}") from None
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(
        f"next: edit {target / 'policy.yaml'} (labels, then each rule), check with "
        f"`guardagent profile check {target}`, guard with `guardagent check --profile "
        f"{target} --trace TRACE.json`"
    )


@main.command(
    epilog=epilog(
        "serve: 0 after SIGTERM or Ctrl-C (it drains first: stopping is its normal end),",
        "2 when a setting does not read.",
    )
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
def serve(host: str, port: int, log_level: str) -> None:
    """Run the guard service (one replica) until SIGTERM; in-flight requests finish.

    Every setting comes from the environment (docs/how-to/deploy.md):
    GUARDAGENT_DATABASE_URL (Postgres shared by replicas; unset: one in-process replica),
    GUARDAGENT_CHROMA_URL (the Chroma server) with GUARDAGENT_MEMORY_KEY,
    GUARDAGENT_SERVICE_TOKEN (or _TOKENS_FILE: scoped tokens), GUARDAGENT_POOL_SIZE,
    GUARDAGENT_LOCK_WAIT_SECONDS,
    GUARDAGENT_PROFILE / _PROFILES and the guard's other GUARDAGENT_* settings.
    """
    from guardagent.service.settings import ServiceSettings

    try:
        settings = ServiceSettings.from_env()
    except ValueError as exc:
        raise InputError(str(exc)) from None
    try:
        from guardagent.service.serve import serve as run
    except ImportError as exc:
        raise InputError(
            f"{exc.name or exc}: the service needs its extra: pip install 'guardagent[service]'"
        ) from None
    if settings.service_token is None and not settings.service_tokens and _beyond_loopback(host):
        click.echo(
            f"warning: serving on {host} without GUARDAGENT_SERVICE_TOKEN: anyone who "
            "reaches the port gets decisions and reads every thread's decisions (set "
            "the token, or serve on 127.0.0.1 behind your own proxy)",
            err=True,
        )
    run(host, port, log_level=log_level, settings=settings)


def _beyond_loopback(host: str) -> bool:
    """Whether `host` may be reached from another machine (a name may resolve anywhere)."""
    import ipaddress

    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


main.add_command(memory)


if __name__ == "__main__":
    main()
