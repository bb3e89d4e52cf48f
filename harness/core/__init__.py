"""What every layer of ctxbench shares, and the kit a strategy author builds on.

The names below are the public surface for context strategies (ours in ``strategies/`` and anyone's
through the ``ctxbench.strategies`` entry points): the window a strategy sees (`Context`), the
messages and blocks it holds, the token count, and the offload stub format. They are stable.

The other modules of this package are shared by the layers above and are not part of that kit:
`harness.core.tools` (the base of tool contracts, the catalogue scenario families declare their tools
into, and the error classes), `harness.core.switches` (the runtime switches), `harness.core.registry`
(name registries with entry points), `harness.core.crn` (common random numbers), `harness.core.files`
(atomic writes), `harness.core.output_paths` (where a command may write), `harness.core.rundir` (the
run directory's files and its `Manifest`), `harness.core.tables` (the tables' outcome names, keys and
columns), `harness.core.suggest` (the "did you mean" of every error about an unknown name),
`harness.core.errors` (the place and text of a pydantic error) and `harness.core.shard` (the `Shard`
value of ``--shard K/N``).
Nothing here imports another project package.
"""

from harness.core.context import Context, ContextOverflow, NoSummarizer, PayloadStore, Window
from harness.core.messages import (
    Block,
    ErrorInfo,
    Message,
    Text,
    ToolResult,
    ToolUse,
    as_summary,
    block_text,
    from_converse,
    nonsummary,
    parse_error,
    pin,
    rebuild,
    to_converse,
    tokens_of,
)
from harness.core.stubs import handle_for, is_stub, parse_stub, render_stub
from harness.core.tokens import Tokenizer, count_tokens, default_tokenizer

__all__ = [
    "Block",
    "Context",
    "ContextOverflow",
    "ErrorInfo",
    "Message",
    "NoSummarizer",
    "PayloadStore",
    "Text",
    "Tokenizer",
    "ToolResult",
    "ToolUse",
    "Window",
    "as_summary",
    "block_text",
    "count_tokens",
    "default_tokenizer",
    "from_converse",
    "handle_for",
    "is_stub",
    "nonsummary",
    "parse_error",
    "parse_stub",
    "pin",
    "rebuild",
    "render_stub",
    "to_converse",
    "tokens_of",
]
