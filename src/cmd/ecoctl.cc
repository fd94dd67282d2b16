// ecoctl: the eco CLI. Everything but process wiring lives in src/ecoctl.
#include "ecoctl/cli.h"

int main(int argc, char** argv) { return eco::ecoctl::Main(argc, argv); }
