// Run by testing/temp_dir_test.ts: a test that fails after a helper made its folder. The folder
// goes at the end of the file all the same.
import { tempLayout } from "../../tests/_helpers.ts";

Deno.test("a test that fails holding a helper's folder", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/left.txt`, "left by a failed test\n");
  throw new Error("this test fails on purpose (testing/temp_dir_test.ts expects it)");
});
