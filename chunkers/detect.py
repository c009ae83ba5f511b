"""Which language a file is written in, and whether it is text at all.

Detection looks at, in order: well-known file names (Makefile, Dockerfile, ...), extensions
(longest first, so `.d.ts` and `.blade.php` win over `.ts` and `.php`), then the shebang line of
`head`. Ids are canonical lowercase names; where tree-sitter-language-pack has the grammar, the id
is the pack's name for it, so the id is all the parser registry needs.
"""

from __future__ import annotations

import os
import re

# Canonical id -> extensions (lowercase, with the dot). Ambiguous `.h` and `.m` are settled by
# `_sniff_header` / `_sniff_m` from the first bytes.
_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyi", ".pyw", ".pyx", ".pxd", ".gyp", ".gypi"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts", ".d.ts"),
    "tsx": (".tsx",),
    "java": (".java", ".jav"),
    "groovy": (".groovy", ".gradle", ".gvy", ".gy", ".gsh", ".jenkinsfile"),
    "kotlin": (".kt", ".kts", ".ktm"),
    "scala": (".scala", ".sc", ".sbt"),
    "csharp": (".cs", ".csx"),
    "swift": (".swift",),
    "dart": (".dart",),
    "c": (".c", ".h"),
    "cpp": (
        ".cpp",
        ".cc",
        ".cxx",
        ".c++",
        ".hpp",
        ".hh",
        ".hxx",
        ".h++",
        ".ipp",
        ".tpp",
        ".inl",
        ".ino",
    ),
    "objc": (".m", ".mm"),
    "ruby": (".rb", ".rake", ".gemspec", ".ru", ".rbw", ".podspec", ".jbuilder", ".thor"),
    "php": (".php", ".phtml", ".php3", ".php4", ".php5", ".php7", ".phps", ".inc"),
    "rust": (".rs",),
    "go": (".go",),
    "elixir": (".ex", ".exs"),
    "commonlisp": (".lisp", ".lsp", ".cl", ".asd", ".fasl.lisp"),
    "scheme": (".scm", ".ss", ".sld", ".sls", ".sps"),
    "racket": (".rkt", ".rktl", ".rktd", ".scrbl"),
    "clojure": (".clj", ".cljs", ".cljc", ".edn", ".bb"),
    "bash": (".sh", ".bash", ".zsh", ".ksh", ".bats", ".command", ".envrc"),
    "fish": (".fish",),
    "powershell": (".ps1", ".psm1", ".psd1"),
    "batch": (".bat", ".cmd"),
    "sql": (".sql", ".ddl", ".dml", ".pgsql", ".psql", ".mysql"),
    "yaml": (".yaml", ".yml"),
    "json": (".json", ".jsonc", ".json5", ".geojson", ".webmanifest", ".ipynb"),
    "toml": (".toml",),
    "xml": (
        ".xml",
        ".xsd",
        ".xsl",
        ".xslt",
        ".svg",
        ".plist",
        ".pom",
        ".csproj",
        ".fsproj",
        ".vbproj",
        ".props",
        ".targets",
        ".xaml",
        ".wsdl",
        ".rss",
        ".atom",
    ),
    "html": (".html", ".htm", ".xhtml", ".shtml"),
    "css": (".css",),
    "scss": (".scss", ".sass"),
    "less": (".less",),
    "markdown": (".md", ".markdown", ".mdx", ".mkd", ".mdown"),
    "rst": (".rst",),
    "latex": (".tex", ".sty", ".cls", ".bib"),
    "dockerfile": (".dockerfile",),
    "make": (".mk", ".mak", ".make"),
    "cmake": (".cmake",),
    "terraform": (".tf", ".tfvars"),
    "hcl": (".hcl", ".nomad"),
    "proto": (".proto",),
    "graphql": (".graphql", ".gql", ".graphqls"),
    "lua": (".lua",),
    "haskell": (".hs", ".lhs"),
    "ocaml": (".ml", ".mli", ".mll", ".mly"),
    "fsharp": (".fs", ".fsi", ".fsx"),
    "r": (".r", ".rmd"),
    "julia": (".jl",),
    "perl": (".pl", ".pm", ".t", ".pod"),
    "erlang": (".erl", ".hrl", ".app.src", ".escript"),
    "zig": (".zig", ".zon"),
    "nim": (".nim", ".nims", ".nimble"),
    "d": (".d", ".di"),
    "fortran": (".f", ".f90", ".f95", ".f03", ".f08", ".for"),
    "pascal": (".pas", ".pp", ".dpr", ".lpr"),
    "ada": (".adb", ".ads"),
    "elm": (".elm",),
    "purescript": (".purs",),
    "gleam": (".gleam",),
    "crystal": (".cr",),
    "nix": (".nix",),
    "vue": (".vue",),
    "svelte": (".svelte",),
    "astro": (".astro",),
    "solidity": (".sol",),
    "verilog": (".v", ".sv", ".svh", ".vh"),
    "vhdl": (".vhd", ".vhdl"),
    "matlab": (".matlab",),
    "vim": (".vim",),
    "elisp": (".el",),
    "tcl": (".tcl",),
    "cuda": (".cu", ".cuh"),
    "glsl": (".glsl", ".vert", ".frag", ".geom", ".comp"),
    "hlsl": (".hlsl",),
    "wgsl": (".wgsl",),
    "thrift": (".thrift",),
    "capnp": (".capnp",),
    "prisma": (".prisma",),
    "ini": (".ini", ".cfg", ".conf", ".properties", ".editorconfig"),
    "csv": (".csv",),
    "starlark": (".bzl", ".star"),
    "haxe": (".hx",),
    "odin": (".odin",),
    "v": (".vv",),
    "smali": (".smali",),
    "awk": (".awk",),
    "jsonnet": (".jsonnet", ".libsonnet"),
    "nginx": (".nginx",),
    "twig": (".twig",),
    "text": (".txt", ".text", ".log"),
}

# Exact file names (compared case-sensitively first, then lowercased).
_FILENAMES: dict[str, str] = {
    "Makefile": "make",
    "makefile": "make",
    "GNUmakefile": "make",
    "Kbuild": "make",
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    "Jenkinsfile": "groovy",
    "CMakeLists.txt": "cmake",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "Guardfile": "ruby",
    "Podfile": "ruby",
    "Vagrantfile": "ruby",
    "Brewfile": "ruby",
    "Fastfile": "ruby",
    "Capfile": "ruby",
    "Berksfile": "ruby",
    "Thorfile": "ruby",
    "Dangerfile": "ruby",
    "config.ru": "ruby",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
    "WORKSPACE.bazel": "starlark",
    "MODULE.bazel": "starlark",
    "Tiltfile": "starlark",
    "BUCK": "starlark",
    "SConstruct": "python",
    "SConscript": "python",
    "Snakefile": "python",
    "wscript": "python",
    "Pipfile": "toml",
    "Cargo.lock": "toml",
    "poetry.lock": "toml",
    "uv.lock": "toml",
    "go.mod": "gomod",
    "go.sum": "gosum",
    "go.work": "gomod",
    "Justfile": "make",
    "justfile": "make",
    "Procfile": "yaml",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
    ".zshrc": "bash",
    ".zprofile": "bash",
    ".bash_aliases": "bash",
    "PKGBUILD": "bash",
    "APKBUILD": "bash",
    ".gitignore": "gitignore",
    ".dockerignore": "gitignore",
    ".gitattributes": "gitattributes",
    ".gitmodules": "ini",
    ".gitconfig": "ini",
    ".editorconfig": "ini",
    "setup.cfg": "ini",
    "tox.ini": "ini",
    ".flake8": "ini",
    ".pylintrc": "ini",
    "requirements.txt": "requirements",
    "mix.lock": "elixir",
    "rebar.config": "erlang",
    "sys.config": "erlang",
    "project.clj": "clojure",
    "deps.edn": "clojure",
    "Package.swift": "swift",
    "meson.build": "meson",
    "meson_options.txt": "meson",
    "nginx.conf": "nginx",
    ".emacs": "elisp",
    "_emacs": "elisp",
    ".vimrc": "vim",
    "_vimrc": "vim",
    "Kconfig": "kconfig",
    "build.ninja": "ninja",
    "LICENSE": "text",
    "COPYING": "text",
    "NOTICE": "text",
    "AUTHORS": "text",
    "CHANGELOG": "text",
    "README": "text",
}

# Interpreter named by a shebang -> language.
_INTERPRETERS: dict[str, str] = {
    "python": "python",
    "pypy": "python",
    "ipython": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "bun": "javascript",
    "deno": "typescript",
    "ts-node": "typescript",
    "tsx": "typescript",
    "sh": "bash",
    "bash": "bash",
    "zsh": "bash",
    "ksh": "bash",
    "dash": "bash",
    "ash": "bash",
    "fish": "fish",
    "pwsh": "powershell",
    "powershell": "powershell",
    "ruby": "ruby",
    "jruby": "ruby",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "luajit": "lua",
    "rscript": "r",
    "julia": "julia",
    "elixir": "elixir",
    "escript": "erlang",
    "groovy": "groovy",
    "kotlin": "kotlin",
    "kscript": "kotlin",
    "scala": "scala",
    "swift": "swift",
    "dart": "dart",
    "guile": "scheme",
    "chicken": "scheme",
    "csi": "scheme",
    "racket": "racket",
    "sbcl": "commonlisp",
    "clisp": "commonlisp",
    "ecl": "commonlisp",
    "bb": "clojure",
    "clojure": "clojure",
    "tclsh": "tcl",
    "wish": "tcl",
    "awk": "awk",
    "gawk": "awk",
    "make": "make",
    "runghc": "haskell",
    "runhaskell": "haskell",
    "stack": "haskell",
    "ocaml": "ocaml",
    "nim": "nim",
    "crystal": "crystal",
    "osascript": "applescript",
}

_BY_EXTENSION: dict[str, str] = {ext: lang for lang, exts in _EXTENSIONS.items() for ext in exts}
# Longest first so compound suffixes (".d.ts", ".app.src") win.
_SUFFIXES = sorted(_BY_EXTENSION, key=len, reverse=True)
_FILENAMES_LOWER = {name.lower(): lang for name, lang in _FILENAMES.items()}

_SHEBANG = re.compile(rb"^#![ \t]*(\S+)(?:[ \t]+(.*))?")
_VERSION_SUFFIX = re.compile(r"[\d.]+$")
_CPP_MARKERS = re.compile(
    rb"^\s*(?:class\s+\w+\s*[:{]|namespace\b|template\s*<|using\s+namespace\b|public:|private:)"
    rb"|std::|#include\s*<(?:iostream|vector|string|memory|map)>",
    re.MULTILINE,
)
_OBJC_MARKERS = re.compile(rb"^\s*(?:@interface|@implementation|@protocol|#import)\b", re.MULTILINE)
_MATLAB_MARKERS = re.compile(rb"^\s*(?:%|function\s+[\w\[\]]+\s*=|end\s*$)", re.MULTILINE)

# Every id this module can return, for callers that want to list them.
KNOWN_LANGUAGES: frozenset[str] = frozenset(
    {*_EXTENSIONS, *_FILENAMES.values(), *_INTERPRETERS.values()}
)


def detect_language(path: str, head: bytes = b"") -> str | None:
    """The language id for `path`, using `head` (the file's first bytes) for shebangs and for
    telling C from C++/Objective-C in `.h` files; None when nothing matches."""
    name = os.path.basename(path.replace("\\", "/"))
    lang = _FILENAMES.get(name) or _FILENAMES_LOWER.get(name.lower())
    if lang is None:
        lang = _by_name_pattern(name)
    if lang is None:
        lower = name.lower()
        for suffix in _SUFFIXES:
            if lower.endswith(suffix) and len(lower) > len(suffix):
                lang = _BY_EXTENSION[suffix]
                break
    if lang == "c" and name.lower().endswith(".h"):
        return _sniff_header(head)
    if lang == "objc" and name.lower().endswith(".m"):
        return _sniff_m(head)
    if lang is None and head.startswith(b"#!"):
        lang = _from_shebang(head)
    return lang


def _by_name_pattern(name: str) -> str | None:
    """Names that vary around a fixed part: Dockerfile.prod, prod.Dockerfile, Makefile.am, ..."""
    lower = name.lower()
    if lower.startswith(("dockerfile.", "containerfile.")) or lower.endswith(".dockerfile"):
        return "dockerfile"
    if lower.startswith("makefile.") or lower in {"makefile.am", "makefile.in"}:
        return "make"
    if lower.startswith("jenkinsfile"):
        return "groovy"
    if lower.startswith(("requirements", "constraints")) and lower.endswith((".txt", ".in")):
        return "requirements"
    if lower in {".env", ".envrc"} or lower.startswith(".env."):
        return "bash"
    return None


def _from_shebang(head: bytes) -> str | None:
    match = _SHEBANG.match(head.split(b"\n", 1)[0])
    if match is None:
        return None
    program = match.group(1).decode("utf-8", "replace").rsplit("/", 1)[-1]
    args = (match.group(2) or b"").decode("utf-8", "replace").split()
    if program == "env":
        # `#!/usr/bin/env -S deno run --allow-net`: skip env's own options.
        args = [a for a in args if not a.startswith("-") and "=" not in a]
        if not args:
            return None
        program = args[0].rsplit("/", 1)[-1]
    program = program.lower()
    return _INTERPRETERS.get(program) or _INTERPRETERS.get(_VERSION_SUFFIX.sub("", program))


def _sniff_header(head: bytes) -> str:
    if _OBJC_MARKERS.search(head):
        return "objc"
    if _CPP_MARKERS.search(head):
        return "cpp"
    return "c"


def _sniff_m(head: bytes) -> str:
    if _OBJC_MARKERS.search(head) or b"@end" in head:
        return "objc"
    if _MATLAB_MARKERS.search(head):
        return "matlab"
    return "objc"


def is_binary(data: bytes) -> bool:
    """True when `data` does not look like text: a NUL byte, or many control bytes, near the
    start. UTF-8 (valid or not) and Latin-1 text pass; UTF-16 files count as binary."""
    sample = data[:8192]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    # Control bytes other than \t \n \f \r and ESC (ANSI colours in logs) are rare in text.
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls / len(sample) > 0.1
