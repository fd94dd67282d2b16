#include "ecoctl/completion.h"

namespace eco::ecoctl {

namespace {

// Written by hand: CLI11 has no completion generator. Files for -f/-v/
// --cacert, the choices of -o, subcommands and flags otherwise.
constexpr const char* kBash = R"SH(# ecoctl completion for bash: source <(ecoctl completion bash)
_ecoctl() {
  local cur prev words cword
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  local sub="" w
  for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case $w in apply|get|delete|status|plan|rollout|completion) sub=$w; break ;; esac
  done
  case $prev in
    -f|--filename|-v|--values|--cacert) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -o|--output) COMPREPLY=($(compgen -W "json yaml" -- "$cur")); return ;;
    --endpoint|--timeout|--token|-w|--wait) return ;;
  esac
  local global="--endpoint --timeout --token --insecure --cacert --dry-run --no-color --help"
  case $sub in
    "") COMPREPLY=($(compgen -W "apply get delete status plan rollout completion $global" -- "$cur")) ;;
    apply) COMPREPLY=($(compgen -W "-f --filename -v --values -s --stop -w --wait $global" -- "$cur")) ;;
    get) COMPREPLY=($(compgen -W "-f --filename -v --values -s --stop -o --output $global" -- "$cur")) ;;
    delete) COMPREPLY=($(compgen -W "-f --filename -v --values -s --stop --strict $global" -- "$cur")) ;;
    status) COMPREPLY=($(compgen -W "-w --wait -o --output $global" -- "$cur")) ;;
    plan) COMPREPLY=($(compgen -W "-f --filename -v --values -o --output $global" -- "$cur")) ;;
    rollout) COMPREPLY=($(compgen -W "pause resume approve abort $global" -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
  esac
}
complete -o default -F _ecoctl ecoctl
)SH";

}  // namespace

std::string CompletionScript(const std::string& shell) {
  if (shell == "bash") return kBash;
  if (shell == "zsh") return std::string("autoload -U +X bashcompinit && bashcompinit\n") + kBash;
  return "";
}

}  // namespace eco::ecoctl
