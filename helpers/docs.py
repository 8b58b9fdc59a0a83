"""``docs/CLI.md``: every option of the ``harms`` command, rendered from its argument parser
(:func:`helpers.cli.build_parser`), so the page cannot drift from what the command accepts::

    python -m helpers.docs > docs/CLI.md

``tests/test_docs.py`` fails when the committed file differs from :func:`cli_reference`. The help
text is formatted at a fixed width (:data:`WIDTH` columns, no colour), so it is the same on every
machine and in every terminal.
"""

from __future__ import annotations

import argparse
import sys

from helpers import paths

__all__ = ["cli_reference", "COMMAND", "WIDTH"]

COMMAND = "python -m helpers.docs > docs/CLI.md"
#: The terminal width the help text is formatted for.
WIDTH = 100

_HEADER = f"""# The `harms` command: every option

*Generated from the argument parser (`helpers.cli.build_parser()`) by `{COMMAND}`;
do not edit by hand: `tests/test_docs.py` fails when this file and the parser disagree.*

The [README](../README.md) shows one example of each task; this page lists every subcommand's
options as `harms SUBCOMMAND --help` prints them, after a few notes on behaviour that the
option list does not say. Run it from the project's environment (`source .venv/bin/activate`, or
`.venv/bin/harms`). The report card has its own page: [REPORT_CARD.md](REPORT_CARD.md).
"""

#: Behaviour the option list does not say (hand-written; it moved here from the README).
_NOTES = """## Notes on behaviour

**Models.** `--model` takes any causal, masked or permutation (XLNet) language model that
`transformers` can load: a registry name, a Hugging Face hub id, a local `save_pretrained`
directory or a `.gguf` file. Without the hub a hub model fails within seconds with one line saying
how to obtain it.

**`harms fill`.** `--top-k K` writes `template_id, template, rank, token, word, probability,
log_prob`: masked LMs at the mask, causal LMs for the next word after the text before the blank
(each template has one blank written `[MASK]`; a piece that starts a word is completed greedily to
the word's end; `--all-pieces` keeps raw pieces, `--skip en|fr|ar` leaves out the stopwords-iso list
of that language and punctuation, `--skip words.txt` your own words). `--candidates FILE` writes
each word's log-probability in each blank (`template_id, template, candidate, n_tokens, log_prob,
method`): masked LMs mask as many tokens as the word has (`--masked joint`, all at once as Kurita
et al. 2019, or `l2r`); causal LMs give the exact next-token probability when only punctuation
follows the blank and the filled sentence's log-likelihood otherwise (as bias-bench scores GPT-2).
The same functions are `helpers.lm.fill.top_k` and `helpers.lm.cloze.cloze_logprobs` (with
`mask_words=` and `kurita_log_ratio` for Kurita's prior).

**`harms stereoset`.** `--predictions FILE` scores per-sentence StereoSet predictions (upstream's
and bias-bench's JSON, `{"intrasentence": [{"id", "score"}, ...], "intersentence": [...]}` with the
dev set's sentence ids, either task or both) as the official `evaluation.py` does: `model, task,
domain, score, value` rows of Count, LMS, SS and ICAT per task and domain, CSV on standard output
without `--output`. On the upstream prediction files it gives `reference_scores_predictions.json` to
the last digit. A key that is not a task (e.g. a misspelled `"intersentance"`) is ignored, as
upstream ignores it, and named in a note. In Python:
`helpers.metrics.stereoset.evaluate(helpers.datasets.stereoset.read_prediction_file(path))`.

**`harms safety`.** `--upstream-compat` reproduces the upstream code's arithmetic, which divides U
by n·m counting the rows whose perplexity is NaN and drops groups with p > 0.05 (for GPT-2 on
ImplicitHate it prints the published 0.259990915); the default divides by the rows kept and keeps
every group. `per_group.csv` carries z, r = z/√(n+m) and the rank-biserial correlation beside U and
S. `--scores` checks each row's text (or its SHA-256 in a `text_sha256` column) against the data
set and refuses scores of other sentences.

**Threads, outputs, errors.** `--threads` defaults to the cores divided among the `harms` runs
already going (or `HARMS_NUM_THREADS`): run two at once and each takes half. Without `--overwrite`
an existing output file is refused before any work. Every bad input is one line `harms: error: …`
(exit 2).

**What you see when something is wrong.** One line on stderr in every case, never a traceback:

| case | what `harms` does | exit |
|---|---|---|
| `--output` empty, an existing file, a path under a file, a folder it cannot write, or an existing card without `--overwrite` | `harms: error: <path>: <why>` before any model is loaded; nothing is created | 2 |
| an unknown model, a hub id without the hub, damaged weights, a nonsense option value, a `--languages` entry the tokenizer cannot write | `harms: error: <what is wrong>` within seconds | 2 |
| one metric of a card cannot run for one model (a word its tokenizer writes only as unknown, a classifier that cannot load, a data set absent offline) | the card is written; that model's row in `status.csv` says `not computed: <why>`, the comparison's row `not tested: <model>: <why>` (left out of the Holm family); one line `harms: note: <model>: <metric> not computed: <why>` | 0 |
| no metric of a card could be computed | `harms: error: nothing could be computed for the card: <metric>: <why>; …`; nothing written | 2 |
| the disk fills | `harms: error: cannot write the score cache in <dir>: No space left on device; set HARMS_CACHE_DIR …` (exit 2), or while writing an output `harms: error: No space left on device (<file>)` (exit 1); no half-written file (every write is atomic) | 2 / 1 |
| Ctrl-C or SIGTERM | `harms: interrupted: 96 of 250 sentences are saved in the score cache; rerun to resume` | 130 / 143 |
| a machine of a multi-machine run dies, never joins, or its port answers with another program | one line naming the machine and the setting that bounds the wait; see [SCALING.md](SCALING.md) | 2 |

**Interrupted runs resume.** Scores are saved to the cache at least every 32 sentences or 30
seconds: a killed run loses at most that, and Ctrl-C or SIGTERM (`kill`, a batch scheduler, `docker
stop`) says exactly how many sentences are saved (exit 130 after Ctrl-C, 143 after SIGTERM: 128 +
the signal, as a shell reports it); rerunning the same command resumes. The same holds for
embedding vectors (SEAT, CEAT, the ToxD probe), StereoSet sentences, cloze and fill-in rows, and
sampled generations (stored batch by batch with the random state, so a resumed run gives the
continuations of an uninterrupted one). Scores of the same sentence in different batches agree to
about 1e-6 (padding and batch partners change the order of float sums; tested to 1e-5).

**Many processes and machines.** `--processes`, `--machines`, `--machine-rank`, `--main-ip` and
`--main-port` split the scoring with Hugging Face Accelerate; `--engine vllm` scores large causal
models with vLLM behind a parity gate against transformers (not yet run on a GPU here).
[SCALING.md](SCALING.md) has the Slurm example, what each failure says and estimated wall times.
"""


def _fixed_terminal(width: int):
    """argparse reads the width from ``COLUMNS`` (through :func:`shutil.get_terminal_size`)."""
    return paths.environment(COLUMNS=str(width), LINES="50", NO_COLOR="1", FORCE_COLOR=None)


def _help(parser: argparse.ArgumentParser) -> str:
    if hasattr(parser, "color"):          # Python >= 3.14 colours help in a terminal
        parser.color = False
    return parser.format_help().rstrip() + "\n"


def cli_reference() -> str:
    """The text of ``docs/CLI.md``: the header, the notes above, one line per subcommand, then
    ``harms --help`` and each subcommand's ``--help`` at :data:`WIDTH` columns."""
    from helpers.cli import build_parser

    with _fixed_terminal(WIDTH):
        parser = build_parser()
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        summary = {a.dest: a.help or "" for a in subs._choices_actions}
        lines = [_HEADER, _NOTES, "## Subcommands", ""]
        lines += [f"- `harms {name}`: {summary.get(name, '')}" for name in subs.choices]
        lines += ["", "## `harms --help`", "", "```text", _help(parser).rstrip("\n"), "```", ""]
        for name, sub in subs.choices.items():
            lines += [f"## `harms {name} --help`", "", "```text", _help(sub).rstrip("\n"), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(cli_reference())
