// The keet executable: everything lives in libkeet (src/app parses the flags).
#include "app/app.h"

int main(int argc, char** argv) { return keet::app::main(argc, argv); }
