# Warnings for the project's own targets.
function(linnet_warnings target)
  # -Werror=switch: a switch over a kind enum (primitives, node kinds) must name every kind.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Werror=switch)
endfunction()
