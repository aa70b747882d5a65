#version 300 es
// Stella's character quad. Single source of truth: WebGL2 loads this file as-is; moderngl swaps the
// version line for "#version 330 core" (precision statements are legal, and ignored, there).
precision highp float;

in vec2 a_corner;            // quad corner, (0,0) bottom-left .. (1,1) top-right

uniform sampler2D u_atlas;
uniform vec4 u_cur_rect;     // atlas UV rect of the current outfit cell: (u0, v0, u1, v1), v down
uniform vec2 u_resolution;   // viewport size in pixels
uniform float u_time;        // seconds; drives the idle breathing

out vec2 v_cell;             // position inside the cell: (0,0) top-left .. (1,1) bottom-right

void main() {
    // Fit the cell into the viewport, keeping its aspect ratio (all cells share one size).
    vec2 cell_px = (u_cur_rect.zw - u_cur_rect.xy) * vec2(textureSize(u_atlas, 0));
    float cell_aspect = cell_px.x / cell_px.y;
    float view_aspect = u_resolution.x / u_resolution.y;
    vec2 half_size = cell_aspect > view_aspect ? vec2(1.0, view_aspect / cell_aspect)
                                               : vec2(cell_aspect / view_aspect, 1.0);
    vec2 pos = (a_corner * 2.0 - 1.0) * half_size;
    // Idle breathing: a slow, slight stretch anchored at the feet (a ~4 s cycle; none at t = 0).
    float breath = 1.0 + 0.006 * sin(u_time * 1.6);
    pos.y = -half_size.y + (pos.y + half_size.y) * breath;
    gl_Position = vec4(pos, 0.0, 1.0);
    v_cell = vec2(a_corner.x, 1.0 - a_corner.y);
}
