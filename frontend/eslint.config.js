// ESLint for the browser studio (`make frontend-lint`): TypeScript's recommended rules with
// type information, React's hooks rules (the React Compiler's checks included), the
// accessibility rules of jsx-a11y, and at most 300 lines a module under src/ (the generated
// src/api/*.d.ts aside). `--max-warnings 0`: warnings fail the check as errors do.
import js from "@eslint/js";
import jsxA11y from "eslint-plugin-jsx-a11y";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "src/api/schema.d.ts", "src/api/messages.d.ts"] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  reactHooks.configs.flat["recommended-latest"],
  jsxA11y.flatConfigs.recommended,
  {
    languageOptions: {
      globals: globals.browser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ["tests/**", "vite.config.ts", "eslint.config.js"],
    languageOptions: { globals: { ...globals.node, ...globals.vitest } },
  },
  // No module over 300 lines: a longer one is split by what its parts do. The generated API
  // types (make api-types) are exempt.
  {
    files: ["src/**/*.ts", "src/**/*.tsx"],
    ignores: ["src/api/*.d.ts"],
    rules: { "max-lines": ["error", { max: 300 }] },
  },
  { files: ["eslint.config.js"], extends: [tseslint.configs.disableTypeChecked] },
);
