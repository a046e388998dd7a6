# cmake -DINPUT=file -DOUTPUT=file.inc -P embed_text.cmake
# Writes OUTPUT: INPUT's text as one C++ raw string literal, for linnetc to
# write out beside the code it compiles (the launch shim and its header).
file(READ "${INPUT}" text)
file(WRITE "${OUTPUT}.tmp" "R\"lntext(${text})lntext\"\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
